/* SIGINT / SIGTERM during a run: the handler only records the signal (async-signal-safe); the
 * run looks at it between files, between segments and after every token (the on_token callback
 * returns false, which ends generation). The first signal also restores the default action, so
 * a second Ctrl-C ends the process at once. */
#ifndef VOX_CLI_INTERRUPT_H
#define VOX_CLI_INTERRUPT_H

#include <stdbool.h>

/* Installs the handler for SIGINT and SIGTERM. Returns 0, or -1 with errno set. */
int vox_interrupt_install(void);
/* True once a signal arrived. */
bool vox_interrupted(void);
/* The signal that arrived (0: none). */
int vox_interrupt_signal(void);

#endif
