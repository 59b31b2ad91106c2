#include "cli/interrupt.h"

#include <signal.h>
#include <string.h>

static volatile sig_atomic_t g_signal;
static voxtral_queue *volatile g_queue;

static void on_signal(int sig) {
    g_signal = sig;
    if (g_queue) voxtral_queue_cancel(g_queue);
}

void vox_interrupt_set_queue(voxtral_queue *q) {
    g_queue = q;
    if (q && g_signal) voxtral_queue_cancel(q);
}

int vox_interrupt_install(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    /* SA_RESTART: reads and writes in progress go on; SA_RESETHAND: the next signal kills */
    sa.sa_flags = SA_RESTART | SA_RESETHAND;
    if (sigaction(SIGINT, &sa, NULL) != 0) return -1;
    return sigaction(SIGTERM, &sa, NULL);
}

bool vox_interrupted(void) { return g_signal != 0; }

int vox_interrupt_signal(void) { return g_signal; }
