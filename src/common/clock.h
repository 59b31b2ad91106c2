/* The one wall clock of the library: monotonic milliseconds (CLOCK_MONOTONIC, the clock
 * Python's time.monotonic() reads, so that a benchmark outside the process can line its own
 * times up with ours). */
#ifndef VOX_COMMON_CLOCK_H
#define VOX_COMMON_CLOCK_H

#ifdef __cplusplus
extern "C" {
#endif

double vox_wall_ms(void);

#ifdef __cplusplus
}
#endif
#endif
