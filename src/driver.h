/* Driver API functions are found at run time through the runtime's entry-point query, so the
 * library needs no link to libcuda. */
#ifndef EW_DRIVER_H
#define EW_DRIVER_H

#ifdef __cplusplus
extern "C" {
#endif

/* The driver's function `name` (as of the CUDA 12.0 ABI), or NULL if the driver lacks it; leaves no
 * error behind for the caller. */
void *ewi_driver_function(const char *name);

#ifdef __cplusplus
}
#endif

#endif
