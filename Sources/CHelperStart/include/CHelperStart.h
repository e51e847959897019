#ifndef PUFF_HELPER_START_H
#define PUFF_HELPER_START_H

/// How many environment variables puff-check dropped before anything else ran (the
/// Swift runtime included); -1 when its start-up code was not linked in.
int puff_helper_dropped_environment(void);

#endif
