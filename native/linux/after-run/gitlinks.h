/*
 * Gitlinks: the paths a repository's index holds as submodules (mode 160000), and those its .gitmodules
 * names. Host git enters each (`git status` recurses into submodules), so after a run that changed the top
 * repository's index or .gitmodules, what they point to is checked too.
 */
#ifndef ALEPH_AFTER_RUN_GITLINKS_H
#define ALEPH_AFTER_RUN_GITLINKS_H

#include "check-types.h"

/* Root R's top repository (R/.git, a directory): when its index or R/.gitmodules changed during the run,
 * every path they name that is a directory beneath R is walked (check-walk.c). -1 when the index cannot be
 * read or parsed (the caller walks the whole root instead). */
int check_gitlinks(struct check *c, int r);

#endif
