#ifndef PUFF_CAUDIT_SHIM_H
#define PUFF_CAUDIT_SHIM_H
#include <libaudit.h>
#endif
