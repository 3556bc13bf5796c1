/*
 * What a tier 3 run leaves behind (`--reap`): the launcher adopts it as a child subreaper and kills it.
 */
#ifndef ALEPH_AFTER_RUN_REAP_H
#define ALEPH_AFTER_RUN_REAP_H

/* Before the run: makes this process a child subreaper. */
void reap_prepare(void);
/* After the run: kills the launcher's remaining children (descendants end up here as their parents die)
 * until none is left. */
void reap_descendants(void);

#endif
