/* SPDX-License-Identifier: Apache-2.0 */
/* The benches' CSV files and the figures of their logs. A figure not measured (a column not timed) is NAN:
 * an empty CSV field, a "-" in the log. */
#ifndef EWB_CSV_H
#define EWB_CSV_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A CSV file at path with its header line (header ends in a newline): NULL where path is NULL, and where
 * it cannot be written (said on stderr). */
FILE *ewb_csv_open(const char *path, const char *header);

/* Close csv (NULL: nothing): 0, or -1 where the file could not be written (said on stderr). */
int ewb_csv_close(FILE *csv);

/* A field after a comma: value in format, or nothing where it is NAN. */
void ewb_csv_number(FILE *csv, const char *format, double value);

/* A figure of the log after a space: value in format (which takes the width, then the value: " %*.3f"),
 * or "-" right-aligned in width where it is NAN. */
void ewb_print_number(const char *format, int width, double value);

#ifdef __cplusplus
}
#endif

#endif
