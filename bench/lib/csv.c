/* SPDX-License-Identifier: Apache-2.0 */
/* The benches' CSV files and log figures (csv.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "csv.h"

FILE *ewb_csv_open(const char *path, const char *header)
{
    if (path == NULL)
        return NULL;
    FILE *csv = fopen(path, "w");
    if (csv == NULL)
        fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
    else
        fputs(header, csv);
    return csv;
}

int ewb_csv_close(FILE *csv)
{
    if (csv == NULL)
        return 0;
    const int failed = ferror(csv) != 0;
    if (fclose(csv) != 0 || failed) {
        fprintf(stderr, "a CSV file could not be written whole\n");
        return -1;
    }
    return 0;
}

void ewb_csv_number(FILE *csv, const char *format, double value)
{
    fputc(',', csv);
    if (!isnan(value))
        fprintf(csv, format, value);
}

void ewb_print_number(const char *format, int width, double value)
{
    if (isnan(value))
        printf(" %*s", width, "-");
    else
        printf(format, width, value);
}
