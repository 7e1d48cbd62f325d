/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * A driver for fuzz targets without libFuzzer: replays every file of the
 * corpus directories given on the command line, then a fixed number of
 * deterministic mutations of each (byte flips, truncations, insertions of
 * separators and quotes), so that every build runs the targets under the
 * sanitizers. The libFuzzer build (make fuzz) explores far more.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t rng = 0x9E3779B97F4A7C15ULL;
static uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static void run_mutations(const uint8_t *data, size_t n) {
  static const char tokens[] = ",\"\n\r\t{}[]:=# .-eE0123456789nNaAiIfF";
  size_t cap = n + 64;
  uint8_t *buf = malloc(cap);
  if (!buf)
    return;
  for (int round = 0; round < 200; round++) {
    memcpy(buf, data, n);
    size_t len = n;
    int edits = 1 + (int)(next() % 4);
    for (int e = 0; e < edits; e++) {
      unsigned op = (unsigned)(next() % 4);
      if (op == 0 && len) {
        buf[next() % len] = (uint8_t)next();
      } else if (op == 1 && len) {
        len = next() % len;
      } else if (op == 2 && len + 1 < cap) {
        size_t at = len ? next() % len : 0;
        memmove(buf + at + 1, buf + at, len - at);
        buf[at] = (uint8_t)tokens[next() % (sizeof tokens - 1)];
        len++;
      } else if (len) {
        size_t at = next() % len;
        buf[at] = (uint8_t)tokens[next() % (sizeof tokens - 1)];
      }
    }
    LLVMFuzzerTestOneInput(buf, len);
  }
  free(buf);
}

static int run_file(const char *path) {
  FILE *fp = fopen(path, "rb");
  if (!fp) {
    fprintf(stderr, "cannot open %s\n", path);
    return 1;
  }
  uint8_t *data = NULL;
  size_t n = 0, cap = 0;
  for (;;) {
    if (n == cap) {
      cap = cap ? cap * 2 : 4096;
      uint8_t *nd = realloc(data, cap);
      if (!nd) {
        free(data);
        fclose(fp);
        return 1;
      }
      data = nd;
    }
    size_t got = fread(data + n, 1, cap - n, fp);
    if (!got)
      break;
    n += got;
  }
  fclose(fp);
  LLVMFuzzerTestOneInput(data, n);
  run_mutations(data, n);
  free(data);
  return 0;
}

int main(int argc, char **argv) {
  int files = 0, bad = 0;
  LLVMFuzzerTestOneInput((const uint8_t *)"", 0);
  for (int i = 1; i < argc; i++) {
    DIR *d = opendir(argv[i]);
    if (!d) {
      bad |= run_file(argv[i]);
      files++;
      continue;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
      if (de->d_name[0] == '.')
        continue;
      char path[4096];
      snprintf(path, sizeof path, "%s/%s", argv[i], de->d_name);
      bad |= run_file(path);
      files++;
    }
    closedir(d);
  }
  printf("replayed %d corpus files with 200 mutations each\n", files);
  return bad || files == 0;
}
