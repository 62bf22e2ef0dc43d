#define _GNU_SOURCE
#include "CTaxiUnitLinux.h"
#include <malloc.h>
#include <pthread.h>
#include <string.h>
#include <sys/timex.h>

bool CTaxiUnitLinux_clockSynchronised(void) {
    struct timex state;
    memset(&state, 0, sizeof state); /* modes = 0: read only, needs no privilege */
    return adjtimex(&state) != TIME_ERROR;
}

int CTaxiUnitLinux_limitMallocArenas(int arenas) {
    return mallopt(M_ARENA_MAX, arenas);
}

int CTaxiUnitLinux_nameCurrentThread(const char *name) {
    return pthread_setname_np(pthread_self(), name);
}
