/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to src/grid/: the bounded HTTP answer buffer both clients (the
 * VEN and the pfid client) read into. */
#ifndef PFI_GRID_INT_H
#define PFI_GRID_INT_H

#include <stddef.h>

struct pfi__http_body {
  char *buf;    /* NUL-terminated; owned, free() */
  size_t len;   /* bytes in buf */
  size_t max;   /* refuse answers longer than this */
  int overflow; /* set when an answer went past max */
};

/* A libcurl CURLOPT_WRITEFUNCTION appending to a struct pfi__http_body
 * (CURLOPT_WRITEDATA); stops the transfer past b->max or without memory. */
size_t pfi__http_body_write(char *p, size_t sz, size_t n, void *ud);

#endif
