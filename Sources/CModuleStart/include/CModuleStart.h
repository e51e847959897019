#ifndef PUFF_MODULE_START_H
#define PUFF_MODULE_START_H

/// Puts back the SWIFT_* variables hidden while the module's Swift runtime started in a
/// setuid host (see start.c). Idempotent; the module's entry points call it first.
void puff_module_restore_environment(void);

/// How many variables were hidden at load (0 when the host is not setuid or had none).
int puff_module_hidden_environment(void);

#endif
