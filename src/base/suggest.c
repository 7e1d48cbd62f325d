/* SPDX-License-Identifier: GPL-3.0-or-later */
/* "Did you mean": the names nearest a mistyped one, by edit distance. */
#include <stdlib.h>
#include <string.h>

#include "opt.h"

size_t pfi_edit_distance(const char *a, const char *b) {
  size_t na = strlen(a), nb = strlen(b);
  /* Three rows of the (na+1) x (nb+1) table: the one before the previous
   * is needed for a transposition. */
  size_t *row = malloc(3 * (nb + 1) * sizeof *row);
  if (!row)
    return (size_t)-1;
  size_t *pp = row, *p = row + nb + 1, *c = row + 2 * (nb + 1);
  for (size_t j = 0; j <= nb; j++)
    p[j] = j;
  for (size_t i = 1; i <= na; i++) {
    c[0] = i;
    for (size_t j = 1; j <= nb; j++) {
      size_t cost = a[i - 1] != b[j - 1];
      size_t d = p[j - 1] + cost;      /* substitution or match */
      if (p[j] + 1 < d)                /* deletion */
        d = p[j] + 1;
      if (c[j - 1] + 1 < d)            /* insertion */
        d = c[j - 1] + 1;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
          pp[j - 2] + 1 < d)           /* transposition of two neighbours */
        d = pp[j - 2] + 1;
      c[j] = d;
    }
    size_t *t = pp;
    pp = p;
    p = c;
    c = t;
  }
  size_t d = p[nb];
  free(row);
  return d;
}

size_t pfi_suggest(const char *name, const char *const *names, size_t n,
                       const char **out, size_t max) {
  size_t best = (size_t)-1, len = strlen(name), k = 0;
  /* Near enough to be a typo: at most 2 edits and at most a third of the
   * name's letters, but 1 for any name ("cpa" -> "cap"). */
  size_t limit = len / 3 > 2 ? 2 : len / 3 ? len / 3 : 1;
  for (size_t i = 0; i < n; i++) {
    size_t d = pfi_edit_distance(name, names[i]);
    if (d == 0 || d > limit || d > best)
      continue;
    if (d < best) {
      best = d;
      k = 0;
    }
    if (k < max)
      out[k++] = names[i];
  }
  return k;
}
