/* reportdoc.c - what `lms report` writes, as Markdown and HTML side by
 * side: paragraphs, headings, lists, tables and images, each written once
 * to both (Note [The report's two documents] in report.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli/report.h"

/* Text with `code` and **strong** spans, written as Markdown and as
 * escaped HTML. */
void lms__doc_text(lms__doc_t *d, const char *s) {
  if (d->md != NULL) fputs(s, d->md);
  int code = 0, strong = 0;
  for (const char *p = s; *p; p++) {
    if (!code && p[0] == '*' && p[1] == '*') {
      fputs(strong ? "</strong>" : "<strong>", d->html);
      strong = !strong;
      p++;
      continue;
    }
    switch (*p) {
      case '`': fputs(code ? "</code>" : "<code>", d->html); code = !code; break;
      case '<': fputs("&lt;", d->html); break;
      case '>': fputs("&gt;", d->html); break;
      case '&': fputs("&amp;", d->html); break;
      default: fputc(*p, d->html);
    }
  }
  if (code) fputs("</code>", d->html);
  if (strong) fputs("</strong>", d->html);
}

/* fmt's text between open and close in HTML, after pre and before post
 * in Markdown. */
static void emit(lms__doc_t *d, const char *pre, const char *open,
                 const char *close, const char *post, const char *fmt,
                 va_list ap) {
  char buf[2048];
  vsnprintf(buf, sizeof buf, fmt, ap);
  fputs(pre, d->md);
  fputs(open, d->html);
  lms__doc_text(d, buf);
  fputs(close, d->html);
  fputs(post, d->md);
}

void lms__doc_para(lms__doc_t *d, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  emit(d, "", "<p>", "</p>\n", "\n\n", fmt, ap);
  va_end(ap);
}

void lms__doc_list_open(lms__doc_t *d) { fputs("<ul>\n", d->html); }

void lms__doc_list_close(lms__doc_t *d) {
  fputs("</ul>\n", d->html);
  fputs("\n", d->md);
}

void lms__doc_item(lms__doc_t *d, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  emit(d, "- ", "<li>", "</li>\n", "\n", fmt, ap);
  va_end(ap);
}

void lms__doc_heading(lms__doc_t *d, int level, const char *s) {
  fprintf(d->md, "%.*s ", level, "###");
  fprintf(d->html, "<h%d>", level);
  lms__doc_text(d, s);
  fprintf(d->html, "</h%d>\n", level);
  fputs("\n\n", d->md);
}

void lms__doc_table_head(lms__doc_t *d, int n, const char *const *cells) {
  fputs("<table>\n<tr>", d->html);
  fputs("|", d->md);
  for (int i = 0; i < n; i++) {
    fputs("<th>", d->html);
    fputc(' ', d->md);
    lms__doc_text(d, cells[i]);
    fputs(" |", d->md);
    fputs("</th>", d->html);
  }
  fputs("</tr>\n", d->html);
  fputs("\n|", d->md);
  for (int i = 0; i < n; i++) fputs(i == 0 ? "---|" : "---:|", d->md);
  fputs("\n", d->md);
}

void lms__doc_table_row(lms__doc_t *d, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fputs("<tr>", d->html);
  fputs("|", d->md);
  char *save = NULL;
  for (char *c = strtok_r(buf, "\t", &save); c != NULL;
       c = strtok_r(NULL, "\t", &save)) {
    fputs("<td>", d->html);
    fputc(' ', d->md);
    lms__doc_text(d, c);
    fputs(" |", d->md);
    fputs("</td>", d->html);
  }
  fputs("</tr>\n", d->html);
  fputs("\n", d->md);
}

void lms__doc_table_end(lms__doc_t *d) {
  fputs("</table>\n", d->html);
  fputs("\n", d->md);
}

void lms__doc_image(lms__doc_t *d, const char *png, const char *alt, int drawn,
                  const char *why) {
  if (drawn) {
    fprintf(d->md, "![%s](%s)\n\n", alt, png);
    fprintf(d->html, "<p><img src=\"%s\" alt=\"%s\"></p>\n", png, alt);
  } else {
    lms__doc_para(d, "Chart `%s` (%s) was not drawn: %s.", png, alt, why);
  }
}

int lms__doc_open(lms__doc_t *d, FILE **js, const char *out,
                  const char *title, char *err) {
  *d = (lms__doc_t){NULL, NULL};
  *js = NULL;
  if (lms__cli_out_dir(out, err) != 0) return -1;
  d->md = lms__report_open_in(out, "report.md", err);
  d->html = d->md ? lms__report_open_in(out, "report.html", err) : NULL;
  *js = d->html ? lms__report_open_in(out, "report.json", err) : NULL;
  if (*js == NULL) return -1;
  fputs("<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>", d->html);
  lms__doc_text(&(lms__doc_t){.md = NULL, .html = d->html}, title);
  fputs("</title></head><body>\n", d->html);
  lms__doc_heading(d, 1, title);
  return 0;
}

void lms__doc_close(lms__doc_t *d, FILE *js) {
  if (d->html != NULL) fputs("</body></html>\n", d->html);
  if (d->md != NULL) fclose(d->md);
  if (d->html != NULL) fclose(d->html);
  if (js != NULL) fclose(js);
  *d = (lms__doc_t){NULL, NULL};
}
