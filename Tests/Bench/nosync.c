/* For `make bench` only: fsync and fdatasync that return at once, preloaded into a reference
 * run of pamtester (pam_permit and pam_puff alike) to show how much of the difference between
 * them is the counter's durable writes. Never a configuration: a count that is not on disk
 * can be lost to a crash. */
int fsync(int descriptor) { (void)descriptor; return 0; }
int fdatasync(int descriptor) { (void)descriptor; return 0; }
