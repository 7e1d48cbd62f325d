/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Figures: a gnuplot script written from plain arrays, run by gnuplot as a
 * child process, its SVG output rewritten to be embedded inline.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pfi/capacity.h"

#include "pfi/report.h"

/* A palette readable on white and by most colour-blind readers (the
 * Okabe-Ito colours plus greys). Index 1.. in struct pfi_series.color. */
static const char *const palette[] = {
    "#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00",
    "#56b4e9", "#000000", "#f0e442", "#999999", "#7f3c8d"};
#define NPALETTE (sizeof palette / sizeof palette[0])

void pfi_panel_init(struct pfi_panel *p) {
  memset(p, 0, sizeof *p);
  p->xmin = p->xmax = p->ymin = p->ymax = NAN;
}

/* Appends `s` as a gnuplot single-quoted string: '' stands for ', and
 * control characters (which would end the command) become spaces. */
static void gp_quote(struct pfi_html *b, const char *s) {
  pfi_html_raw(b, "'", 1);
  for (const char *p = s ? s : ""; *p; p++) {
    if (*p == '\'')
      pfi_html_raw(b, "''", 2);
    else if ((unsigned char)*p < 0x20 || *p == 0x7f)
      pfi_html_raw(b, " ", 1);
    else
      pfi_html_raw(b, p, 1);
  }
  pfi_html_raw(b, "'", 1);
}

static void gp_range(struct pfi_html *b, const char *axis, double lo,
                     double hi) {
  pfi_html_printf(b, "set %srange [", axis);
  if (isfinite(lo))
    pfi_html_printf(b, "%.17g", lo);
  else
    pfi_html_puts(b, "*");
  pfi_html_puts(b, ":");
  if (isfinite(hi))
    pfi_html_printf(b, "%.17g", hi);
  else
    pfi_html_puts(b, "*");
  pfi_html_puts(b, "]\n");
}

static int point_ok(const struct pfi_series *s, size_t i) {
  if (!isfinite(s->x[i]) || !isfinite(s->y[i]))
    return 0;
  if ((s->style == PFI_STYLE_ERRORBARS || s->style == PFI_STYLE_ERRORLINES) &&
      (!s->ylo || !s->yhi || !isfinite(s->ylo[i]) || !isfinite(s->yhi[i])))
    return 0;
  return 1;
}

static size_t series_points(const struct pfi_series *s) {
  size_t n = 0;
  if (!s->x || !s->y)
    return 0;
  for (size_t i = 0; i < s->n; i++)
    n += point_ok(s, i);
  return n;
}

/* The script of `f` for gnuplot terminal `term`: "svg" or "png". */
static int figure_script(const struct pfi_figure *f, const char *term,
                         struct pfi_html *b, struct pfi_error *err) {
  if (!f || f->npanels == 0 || f->rows < 1 || f->cols < 1 ||
      (size_t)f->rows * (size_t)f->cols < f->npanels || f->width < 50 ||
      f->height < 50)
    return pfi_error_set(err, PFI_EINVAL, "figure: bad layout");
  /* Plain text labels (noenhanced): a job name such as moe_ft must not be
   * read as a subscript. The background is drawn so that the figure looks
   * the same on any page colour. */
  if (strcmp(term, "png") == 0)
    pfi_html_printf(b,
                    "set terminal pngcairo size %d,%d noenhanced font "
                    "'sans,%d' background '#ffffff'\n"
                    "set encoding utf8\nset output\n",
                    f->width, f->height, f->font_pt > 0 ? f->font_pt : 10);
  else
    pfi_html_printf(b,
                    "set terminal svg size %d,%d noenhanced font 'sans,%d' "
                    "background '#ffffff'\n"
                    "set encoding utf8\nset output\n",
                    f->width, f->height, f->font_pt > 0 ? f->font_pt : 10);
  /* Data first, as inline data blocks: the script is one file. */
  for (size_t p = 0; p < f->npanels; p++) {
    const struct pfi_panel *pn = &f->panels[p];
    for (size_t k = 0; k < pn->nseries; k++) {
      const struct pfi_series *s = &pn->series[k];
      if (series_points(s) == 0)
        continue;
      pfi_html_printf(b, "$d%zu_%zu << EOD\n", p, k);
      for (size_t i = 0; i < s->n; i++) {
        if (!point_ok(s, i))
          continue;
        pfi_html_printf(b, "%.17g %.17g", s->x[i], s->y[i]);
        if (s->style == PFI_STYLE_ERRORBARS || s->style == PFI_STYLE_ERRORLINES)
          pfi_html_printf(b, " %.17g %.17g", s->ylo[i], s->yhi[i]);
        pfi_html_puts(b, "\n");
      }
      pfi_html_puts(b, "EOD\n");
    }
  }
  if (f->npanels > 1)
    pfi_html_printf(b, "set multiplot layout %d,%d\n", f->rows, f->cols);
  for (size_t p = 0; p < f->npanels; p++) {
    const struct pfi_panel *pn = &f->panels[p];
    pfi_html_puts(b, "reset\nset grid lc rgb '#dddddd'\nset border lc rgb "
                     "'#444444'\nset tics nomirror\nset title ");
    gp_quote(b, pn->title);
    pfi_html_puts(b, "\nset xlabel ");
    gp_quote(b, pn->xlabel);
    pfi_html_puts(b, "\nset ylabel ");
    gp_quote(b, pn->ylabel);
    pfi_html_puts(b, "\n");
    if (pn->key) {
      pfi_html_printf(b, "set key %s opaque box lc rgb '#bbbbbb'\n",
                      pn->key_pos ? pn->key_pos : "top right");
      /* The key position is the caller's constant, never user text. */
    } else {
      pfi_html_puts(b, "unset key\n");
    }
    if (pn->nxtics && pn->xtic_pos && pn->xtic_label) {
      pfi_html_puts(b, "set xtics (");
      for (size_t i = 0; i < pn->nxtics; i++) {
        if (i)
          pfi_html_puts(b, ", ");
        gp_quote(b, pn->xtic_label[i]);
        pfi_html_printf(b, " %.17g", pn->xtic_pos[i]);
      }
      pfi_html_puts(b, ")\n");
    }
    size_t drawn = 0;
    for (size_t k = 0; k < pn->nseries; k++)
      drawn += series_points(&pn->series[k]) > 0;
    if (drawn == 0) {
      /* A panel with nothing to draw says so instead of failing the whole
       * figure (gnuplot refuses to autoscale an empty plot). */
      pfi_html_puts(b, "set xrange [0:1]\nset yrange [0:1]\nunset xtics\n"
                       "unset ytics\nset label 1 'no data' at 0.5,0.5 center\n"
                       "plot 2 notitle\n");
      continue;
    }
    gp_range(b, "x", pn->xmin, pn->xmax);
    gp_range(b, "y", pn->ymin, pn->ymax);
    pfi_html_puts(b, "plot ");
    size_t done = 0;
    for (size_t k = 0; k < pn->nseries; k++) {
      const struct pfi_series *s = &pn->series[k];
      if (series_points(s) == 0)
        continue;
      if (done++)
        pfi_html_puts(b, ", \\\n  ");
      const char *with = "linespoints pt 7 ps 0.5 lw 1.5";
      const char *use = "1:2";
      switch (s->style) {
      case PFI_STYLE_POINTS:
        with = "points pt 7 ps 0.6";
        break;
      case PFI_STYLE_LINES:
        with = "lines lw 1.5";
        break;
      case PFI_STYLE_ERRORBARS:
        with = "yerrorbars pt 7 ps 0.6";
        use = "1:2:3:4";
        break;
      case PFI_STYLE_ERRORLINES:
        with = "yerrorlines pt 7 ps 0.6 lw 2";
        use = "1:2:3:4";
        break;
      default:
        break;
      }
      pfi_html_printf(b, "$d%zu_%zu using %s with %s", p, k, use, with);
      if (s->dashed)
        pfi_html_puts(b, " dt 2");
      if (s->color > 0)
        pfi_html_printf(b, " lc rgb '%s'",
                        palette[(size_t)(s->color - 1) % NPALETTE]);
      if (s->title && *s->title) {
        pfi_html_puts(b, " title ");
        gp_quote(b, s->title);
      } else {
        pfi_html_puts(b, " notitle");
      }
    }
    pfi_html_puts(b, "\n");
  }
  if (f->npanels > 1)
    pfi_html_puts(b, "unset multiplot\n");
  if (!pfi_html_ok(b))
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  return 0;
}

int pfi_figure_script(const struct pfi_figure *f, struct pfi_html *b,
                      struct pfi_error *err) {
  return figure_script(f, "svg", b, err);
}

/* Length of the id-defining or id-referencing pattern at `p`, or 0. */
static size_t id_pattern(const char *p, const char *start) {
  static const char *const pats[] = {"id='", "id=\"", "href='#", "href=\"#",
                                     "url(#"};
  for (size_t i = 0; i < sizeof pats / sizeof pats[0]; i++) {
    size_t n = strlen(pats[i]);
    if (strncmp(p, pats[i], n) != 0)
      continue;
    /* "id=" must be a whole attribute name, not the end of another one. */
    if (i < 2 && p > start && p[-1] != ' ' && p[-1] != '\t' && p[-1] != '\n')
      continue;
    return n;
  }
  return 0;
}

char *pfi_svg_inline(const char *in, size_t len, const char *prefix) {
  const char *end = in + len;
  const char *p = NULL;
  for (const char *q = in; q + 4 <= end; q++)
    if (memcmp(q, "<svg", 4) == 0) {
      p = q;
      break;
    }
  if (!p)
    return NULL;
  struct pfi_html b;
  pfi_html_init(&b);
  const char *start = p;
  while (p < end) {
    size_t n = (size_t)(end - p) >= 8 ? id_pattern(p, start) : 0;
    if (n) {
      pfi_html_raw(&b, p, n);
      pfi_html_puts(&b, prefix);
      p += n;
    } else {
      pfi_html_raw(&b, p, 1);
      p++;
    }
  }
  return pfi_html_detach(&b);
}

/* Reads the whole of fd into a buffer. */
static int read_all(int fd, struct pfi_html *out) {
  char buf[65536];
  for (;;) {
    ssize_t r = read(fd, buf, sizeof buf);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return PFI_EIO;
    if (r == 0)
      return 0;
    if (pfi_html_raw(out, buf, (size_t)r))
      return PFI_ENOMEM;
  }
}

static int write_all(int fd, const char *s, size_t n) {
  while (n) {
    ssize_t w = write(fd, s, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    s += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Makes a temporary file and returns its descriptor (path in `path`). */
static int temp_file(char *path, size_t n) {
  const char *dir = getenv("TMPDIR");
  if (!dir || !*dir)
    dir = "/tmp";
  if (snprintf(path, n, "%s/pfi-plot-XXXXXX", dir) >= (int)n)
    return -1;
  return mkstemp(path);
}

/* Runs gnuplot on the script of `f` for terminal `term`; its standard
 * output lands in `out` (appended). */
static int run_gnuplot(const struct pfi_figure *f, const char *term,
                       struct pfi_html *out, struct pfi_error *err) {
  int rc = 0;
  struct pfi_html script, diag;
  char spath[4096] = "", epath[4096] = "";
  int sfd = -1, efd = -1, pipefd[2] = {-1, -1};
  pid_t pid = -1;
  pfi_html_init(&script);
  pfi_html_init(&diag);
  rc = figure_script(f, term, &script, err);
  if (rc)
    goto out;
  sfd = temp_file(spath, sizeof spath);
  if (sfd < 0) {
    spath[0] = '\0';
    rc = pfi_error_set(err, PFI_EIO, "temporary file: %s", strerror(errno));
    goto out;
  }
  if (write_all(sfd, script.s, script.len) != 0) {
    rc = pfi_error_set(err, PFI_EIO, "%s: %s", spath, strerror(errno));
    goto out;
  }
  efd = temp_file(epath, sizeof epath);
  if (efd < 0) {
    epath[0] = '\0';
    rc = pfi_error_set(err, PFI_EIO, "temporary file: %s", strerror(errno));
    goto out;
  }
  if (pipe(pipefd) != 0) {
    rc = pfi_error_set(err, PFI_EIO, "pipe: %s", strerror(errno));
    goto out;
  }
  const char *prog = getenv("PFI_GNUPLOT");
  if (!prog || !*prog)
    prog = "gnuplot";
  pid = fork();
  if (pid < 0) {
    rc = pfi_error_set(err, PFI_ECHILD, "fork: %s", strerror(errno));
    goto out;
  }
  if (pid == 0) {
    /* Child: standard output to the pipe, diagnostics to a file, no input.
     * Only async-signal-safe calls until exec. */
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0)
      dup2(devnull, 0);
    dup2(pipefd[1], 1);
    dup2(efd, 2);
    close(pipefd[0]);
    close(pipefd[1]);
    char *const argv[] = {(char *)prog, spath, NULL};
    execvp(prog, argv);
    _exit(127);
  }
  close(pipefd[1]);
  pipefd[1] = -1;
  int rrc = read_all(pipefd[0], out);
  /* Closed before waiting: when reading stopped early (no memory for the
   * output), gnuplot may still be writing, and with the read end open it
   * would block on the full pipe while we wait for it, for ever. Closed,
   * its writes fail and it exits. */
  close(pipefd[0]);
  pipefd[0] = -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  pid = -1;
  if (rrc) {
    rc = pfi_error_set(err, rrc, "reading gnuplot's output failed");
    goto out;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && out->len == 0) {
    /* A missing program is a run-time failure of the environment (exit
     * status 1), not bad input. */
    rc = pfi_error_set(err, PFI_ECHILD,
                       "%s not found: figures need gnuplot (Debian package "
                       "gnuplot-nox; or set PFI_GNUPLOT)",
                       prog);
    goto out;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || out->len == 0) {
    /* The first line of gnuplot's diagnostics says what went wrong. */
    lseek(efd, 0, SEEK_SET);
    read_all(efd, &diag);
    char line[256] = "";
    if (diag.s) {
      const char *s = diag.s;
      while (*s == '\n' || *s == ' ')
        s++;
      size_t n = strcspn(s, "\n");
      if (n >= sizeof line)
        n = sizeof line - 1;
      memcpy(line, s, n);
      line[n] = '\0';
    }
    rc = pfi_error_set(err, PFI_ECHILD, "gnuplot failed (%s%d)%s%s",
                       WIFEXITED(status) ? "exit status " : "signal ",
                       WIFEXITED(status) ? WEXITSTATUS(status)
                                         : WTERMSIG(status),
                       *line ? ": " : "", line);
    goto out;
  }
out:
  if (pipefd[0] >= 0)
    close(pipefd[0]);
  if (pipefd[1] >= 0)
    close(pipefd[1]);
  if (sfd >= 0)
    close(sfd);
  if (efd >= 0)
    close(efd);
  if (spath[0])
    unlink(spath);
  if (epath[0])
    unlink(epath);
  pfi_html_release(&script);
  pfi_html_release(&diag);
  return rc;
}

int pfi_figure_svg(const struct pfi_figure *f, const char *id_prefix,
                   char **svg, struct pfi_error *err) {
  *svg = NULL;
  for (const char *c = id_prefix; c && *c; c++)
    if (!(*c == '-' || *c == '_' || (*c >= '0' && *c <= '9') ||
          (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z')))
      return pfi_error_set(err, PFI_EINVAL, "figure: bad id prefix");
  struct pfi_html out;
  pfi_html_init(&out);
  int rc = run_gnuplot(f, "svg", &out, err);
  if (rc == 0) {
    *svg = pfi_svg_inline(out.s, out.len, id_prefix ? id_prefix : "");
    if (!*svg) {
      /* NULL means either no drawing or no memory; only the first is
       * gnuplot's fault. */
      int has_svg = 0;
      for (size_t i = 0; i + 4 <= out.len && !has_svg; i++)
        has_svg = memcmp(out.s + i, "<svg", 4) == 0;
      rc = has_svg
               ? pfi_error_set(err, PFI_ENOMEM, "out of memory")
               : pfi_error_set(err, PFI_ECHILD, "gnuplot wrote no SVG drawing");
    }
  }
  pfi_html_release(&out);
  return rc;
}

int pfi_figure_write(const struct pfi_figure *f, const char *path,
                     struct pfi_error *err) {
  const char *ext = path ? strrchr(path, '.') : NULL;
  int png = ext && strcmp(ext, ".png") == 0;
  if (!ext || (!png && strcmp(ext, ".svg") != 0))
    return pfi_error_set(err, PFI_EINVAL,
                         "%s: a figure's file name must end in .svg or .png",
                         path ? path : "");
  /* An unwritable output is named here, with the reason, rather than as a
   * failure of gnuplot. */
  FILE *fp = fopen(path, "wb");
  if (!fp)
    return pfi_error_set(err, PFI_EIO, "cannot write %s: %s", path,
                         strerror(errno));
  int rc;
  char *svg = NULL;
  struct pfi_html out;
  pfi_html_init(&out);
  if (png)
    rc = run_gnuplot(f, "png", &out, err);
  else
    rc = pfi_figure_svg(f, "", &svg, err);
  if (rc == 0) {
    const char *data = png ? out.s : svg;
    size_t n = png ? out.len : strlen(svg);
    if (fwrite(data, 1, n, fp) != n)
      rc = pfi_error_set(err, PFI_EIO, "cannot write %s: %s", path,
                         strerror(errno));
  }
  if (fclose(fp) != 0 && rc == 0)
    rc = pfi_error_set(err, PFI_EIO, "cannot write %s: %s", path,
                       strerror(errno));
  /* No half-drawn or empty file is left behind. */
  if (rc != 0)
    unlink(path);
  free(svg);
  pfi_html_release(&out);
  return rc;
}

size_t pfi_capacity_series(const struct pfi_capacity *cap, size_t n,
                           double *buf, struct pfi_series *ser) {
  size_t ns = 0;
  for (size_t s = 0; s < n; s++) {
    size_t m = cap[s].n;
    double *x = buf, *y = x + m, *lo = y + m, *hi = lo + m;
    buf += 4 * m;
    for (size_t k = 0; k < m; k++) {
      x[k] = 100 * cap[s].pts[k].shed_frac;
      y[k] = 100 * cap[s].pts[k].loss_frac;
      lo[k] = 100 * cap[s].pts[k].loss_lo_frac;
      hi[k] = 100 * cap[s].pts[k].loss_hi_frac;
    }
    memset(&ser[ns], 0, sizeof ser[ns]);
    ser[ns].title = pfi_strategy_name(cap[s].strategy);
    ser[ns].x = x;
    ser[ns].y = y;
    ser[ns].n = m;
    ser[ns].style = PFI_STYLE_LINESPOINTS;
    ser[ns].color = (int)s + 1;
    ns++;
    if (cap[s].has_interval) {
      memset(&ser[ns], 0, sizeof ser[ns]);
      ser[ns].x = x;
      ser[ns].y = y;
      ser[ns].ylo = lo;
      ser[ns].yhi = hi;
      ser[ns].n = m;
      ser[ns].style = PFI_STYLE_ERRORBARS;
      ser[ns].color = (int)s + 1;
      ns++;
    }
  }
  return ns;
}
