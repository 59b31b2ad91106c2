/* SIGINT / SIGTERM during a run: the handler records the signal and cancels the queue it was
 * given (both async-signal-safe); the queue then ends every request not yet complete. The first
 * signal also restores the default action, so a second Ctrl-C ends the process at once. */
#ifndef VOX_CLI_INTERRUPT_H
#define VOX_CLI_INTERRUPT_H

#include <stdbool.h>

#include "voxtral/voxtral.h"

/* Installs the handler for SIGINT and SIGTERM. Returns 0, or -1 with errno set. */
int vox_interrupt_install(void);
/* The queue a signal cancels (NULL: none). */
void vox_interrupt_set_queue(voxtral_queue *q);
/* True once a signal arrived. */
bool vox_interrupted(void);
/* The signal that arrived (0: none). */
int vox_interrupt_signal(void);

#endif
