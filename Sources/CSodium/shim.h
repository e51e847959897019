#ifndef PUFF_CSODIUM_SHIM_H
#define PUFF_CSODIUM_SHIM_H
#include <sodium.h>
#endif
