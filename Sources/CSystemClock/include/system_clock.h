#ifndef TAXIUNITD_SYSTEM_CLOCK_H
#define TAXIUNITD_SYSTEM_CLOCK_H
#include <stdbool.h>

/// Whether the kernel considers the system time synchronised (what timedatectl shows).
bool taxiunitd_system_clock_synchronised(void);

#endif
