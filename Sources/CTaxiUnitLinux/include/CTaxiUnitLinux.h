#ifndef C_TAXIUNIT_LINUX_H
#define C_TAXIUNIT_LINUX_H
#include <stdbool.h>

/* The Linux and glibc calls Swift's Glibc module leaves out. Everything C the daemon needs beyond
   the C libraries it links (libgps, libmosquitto, libsystemd) is here, and nowhere else. */

/// Whether the kernel considers the system time synchronised (what timedatectl shows).
bool CTaxiUnitLinux_clockSynchronised(void);

/// glibc's mallopt(M_ARENA_MAX, arenas); returns mallopt's result (1 on success).
int CTaxiUnitLinux_limitMallocArenas(int arenas);

/// Names the calling thread for the kernel (top -H, ps -L, /proc/PID/task/TID/comm); the kernel keeps
/// 15 bytes and refuses longer names (ERANGE). Returns pthread_setname_np's result.
int CTaxiUnitLinux_nameCurrentThread(const char *name);

#endif
