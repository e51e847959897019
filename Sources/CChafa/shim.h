#ifndef PUFF_CCHAFA_SHIM_H
#define PUFF_CCHAFA_SHIM_H
#include <chafa.h>
#endif
