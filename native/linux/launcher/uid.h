/*
 * The run's own uid (--uid-range LO HI): one of the range that no other running command holds.
 */
#ifndef ALEPH_LAUNCHER_UID_H
#define ALEPH_LAUNCHER_UID_H

/* A uid of LO..HI whose lock file (`uid-UID.lock` under --state) this process now holds for the run;
 * dies when every one is taken. */
long pick_uid(long lo, long hi);

#endif
