#ifndef PUFF_CSTB_SHIM_H
#define PUFF_CSTB_SHIM_H
#include <stb/stb_image.h>
#endif
