#ifndef PUFF_CPAM_SHIM_H
#define PUFF_CPAM_SHIM_H
#include <security/pam_appl.h>
#include <security/pam_modules.h>
#include <security/pam_ext.h>
#include <security/pam_modutil.h>
#include <syslog.h>
#endif
