/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to src/grid/: the bounded HTTP answer buffer both clients (the
 * VEN and the pfid client) read into. */
#ifndef PFI_GRID_INT_H
#define PFI_GRID_INT_H

#include <stddef.h>

#include "pfi/error.h"

struct pfi__http_body {
  char *buf;    /* NUL-terminated; owned, free() */
  size_t len;   /* bytes in buf */
  size_t max;   /* refuse answers longer than this */
  int overflow; /* set when an answer went past max */
};

/* A libcurl CURLOPT_WRITEFUNCTION appending to a struct pfi__http_body
 * (CURLOPT_WRITEDATA); stops the transfer past b->max or without memory. */
size_t pfi__http_body_write(char *p, size_t sz, size_t n, void *ud);

/* A webhook notification's JSON: the body, or when the body is a JSON
 * string, the JSON that string holds; snake_case keys (object_type,
 * program_id...) given their OpenADR camelCase names beside them, at every
 * depth. NULL (err set, with line and column) when either is not JSON. */
typedef struct json_t json_t;
json_t *pfi__oadr_notification_load(const char *json, size_t len,
                                    struct pfi_error *err);

#endif
