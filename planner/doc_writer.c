/*
 * doc_writer.c — the document writer of `plan report` (see doc_writer.h): one call per block,
 * HTML or Markdown, and the one place where strings are quoted for either format.
 *
 * HTML: our inline markup becomes <code>, <strong> and <a>; everything else is escaped by
 * html_esc_char. Markdown: our markup is Markdown already, so text goes out as given, except in
 * table cells, where md_cell keeps | and line breaks from ending the cell or the row.
 */
#include "doc_writer.h"

#include <ctype.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "report_threads.h"

/* ------------------------------------------------------------------------------------------ */
/* Quoting                                                                                    */
/* ------------------------------------------------------------------------------------------ */

void doc_plain(char *dst, size_t n, const char *src)
{
    size_t o = 0;
    for (; *src && o + 3 < n; src++) {
        /* a line break (or any control character) becomes a space: in Markdown a new line
         * could start a block of its own ("- item", "1. item", "---") */
        if ((unsigned char)*src < 0x20 || *src == 0x7f) {
            dst[o++] = ' ';
            continue;
        }
        if (strchr("\\`*_[]|<>#", *src)) dst[o++] = '\\';
        dst[o++] = *src;
    }
    dst[o] = '\0';
}

void doc_code_safe(char *dst, size_t n, const char *src)
{
    size_t o = 0;
    for (; *src && o + 1 < n; src++) dst[o++] = *src == '`' || *src == '\\' ? '\'' : *src;
    dst[o] = '\0';
}

void doc_safe_id(char *dst, size_t n, const char *src)
{
    size_t o = 0;
    for (; *src && o + 1 < n; src++)
        dst[o++] = isalnum((unsigned char)*src) || *src == '_' ? *src : '-';
    dst[o] = '\0';
}

/* One character of HTML text or of a double-quoted attribute value. */
static void html_esc_char(FILE *f, char c)
{
    switch (c) {
    case '&': fputs("&amp;", f); break;
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '"': fputs("&quot;", f); break;
    default: fputc(c, f);
    }
}

/* At most n characters of our text inside an inline element: escapes \x resolved. */
static void html_esc_n(FILE *f, const char *s, size_t n)
{
    for (size_t i = 0; i < n && s[i]; i++) {
        if (s[i] == '\\' && i + 1 < n && s[i + 1]) i++;
        html_esc_char(f, s[i]);
    }
}

/* Literal text (code blocks, titles): every character escaped, nothing interpreted. */
static void html_esc(FILE *f, const char *s)
{
    for (; *s; s++) html_esc_char(f, *s);
}

/* Our inline markup to HTML. */
static void html_inline(FILE *f, const char *s)
{
    while (*s) {
        if (*s == '\\' && s[1]) {
            html_esc_char(f, s[1]);
            s += 2;
            continue;
        }
        if (*s == '`') {
            const char *e = strchr(s + 1, '`');
            if (e) {
                fputs("<code>", f);
                html_esc_n(f, s + 1, e - s - 1);
                fputs("</code>", f);
                s = e + 1;
                continue;
            }
        }
        if (s[0] == '*' && s[1] == '*') {
            const char *e = strstr(s + 2, "**");
            if (e) {
                fputs("<strong>", f);
                html_esc_n(f, s + 2, e - s - 2);
                fputs("</strong>", f);
                s = e + 2;
                continue;
            }
        }
        if (*s == '[') {
            const char *m = strchr(s, ']');
            const char *e = m && m[1] == '(' ? strchr(m, ')') : NULL;
            if (e) {
                fputs("<a href=\"", f);
                html_esc_n(f, m + 2, e - m - 2);
                fputs("\">", f);
                html_esc_n(f, s + 1, m - s - 1);
                fputs("</a>", f);
                s = e + 1;
                continue;
            }
        }
        html_esc_char(f, *s++);
    }
}

/* Our text as one Markdown table cell: an unescaped | would end the cell (GitHub's tables,
 * code spans included) and a line break the row; | becomes \| and a line break a space (what
 * it renders as in a paragraph). \x escapes pass through. */
static void md_cell(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\' && s[1]) {
            fputc(*s++, f);
            fputc(*s, f);
        } else if (*s == '|') {
            fputs("\\|", f);
        } else if (*s == '\n' || *s == '\r') {
            fputc(' ', f);
        } else {
            fputc(*s, f);
        }
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Blocks                                                                                     */
/* ------------------------------------------------------------------------------------------ */

static char *vfmt(const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    char *s = malloc(n > 0 ? n + 1 : 1);
    if (!s) return NULL;
    vsnprintf(s, n + 1, fmt, ap);
    return s;
}

void doc_init(doc *d, FILE *f, doc_format fmt, const char *path)
{
    memset(d, 0, sizeof *d);
    d->f = f;
    d->fmt = fmt;
    d->st = CM_OK;
    /* where Markdown's images go: beside the file, named after its stem */
    const char *slash = strrchr(path, '/');
    if (slash) snprintf(d->image_dir, sizeof d->image_dir, "%.*s", (int)(slash - path), path);
    else snprintf(d->image_dir, sizeof d->image_dir, ".");
    if (!d->image_dir[0]) snprintf(d->image_dir, sizeof d->image_dir, "/");
    const char *base = slash ? slash + 1 : path;
    const char *dot = strrchr(base, '.');
    snprintf(d->image_stem, sizeof d->image_stem, "%.*s",
             (int)(dot ? dot - base : (long)strlen(base)), base);
}

void doc_begin(doc *d, const char *title, const char *css)
{
    if (d->fmt != DOC_HTML) return;
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>",
          d->f);
    html_esc(d->f, title);
    fprintf(d->f, "</title>\n<style>%s</style>\n</head>\n<body>\n", css);
}

/*
 * Markdown's charts are drawn and written as PNG files (each whole: a temporary file, synced)
 * at doc_end, on every core: the text that links to them does not wait for them, and the
 * files' syncs overlap. Each file is the one drawn in place would be; the first that fails, in
 * the document's order, is the document's failure. None is renamed into place before
 * doc_publish, after every chart and the document itself were written: a failed report left
 * the charts written before the failure beside the old document (found by robust22).
 */
struct doc_png {
    chart c;
    char path[2 * PATH_MAX + 2];
    whole_file w; /* written and synced by doc_end, put in place by doc_publish */
    cm_status st;
    char err[CM_ERRLEN];
};

typedef struct {
    struct doc_png *png;
    int n, next;
    pthread_mutex_t mu;
} png_work;

static void *write_pngs(void *arg)
{
    png_work *w = arg;
    for (;;) {
        pthread_mutex_lock(&w->mu);
        int k = w->next < w->n ? w->next++ : -1;
        pthread_mutex_unlock(&w->mu);
        if (k < 0) return NULL;
        struct doc_png *p = &w->png[k];
        p->st = chart_png_staged(&p->c, p->path, &p->w, p->err, sizeof p->err);
    }
}

void doc_end(doc *d)
{
    doc_list_end(d);
    if (d->fmt == DOC_HTML) fputs("</body>\n</html>\n", d->f);
    if (d->npng > 0) {
        png_work w = {.png = d->png, .n = d->npng};
        pthread_mutex_init(&w.mu, NULL);
        report_on_threads(write_pngs, &w, d->npng);
        pthread_mutex_destroy(&w.mu);
        for (int k = 0; k < d->npng; k++) {
            if (d->png[k].st == CM_OK) d->images++;
            else if (d->st == CM_OK) {
                d->st = CM_EIO; /* as when drawn in place */
                snprintf(d->err, sizeof d->err, "%s", d->png[k].err);
            }
        }
    }
}

/* Drops the staged charts and forgets them. */
static void doc_drop_pngs(doc *d)
{
    for (int k = 0; k < d->npng; k++)
        if (d->png[k].st == CM_OK) whole_file_abort(&d->png[k].w);
    free(d->png);
    d->png = NULL;
    d->npng = d->png_cap = 0;
}

cm_status doc_publish(doc *d, char *err, size_t errlen)
{
    cm_status st = d->st;
    if (st != CM_OK) snprintf(err, errlen, "%s", d->err);
    for (int k = 0; st == CM_OK && k < d->npng; k++) {
        st = whole_file_publish(&d->png[k].w, err, errlen);
        d->png[k].st = CM_EIO; /* released either way */
    }
    doc_drop_pngs(d);
    return st;
}

void doc_abort(doc *d)
{
    doc_drop_pngs(d);
}

void doc_h(doc *d, int level, const char *id, const char *fmt, ...)
{
    doc_list_end(d);
    va_list ap;
    va_start(ap, fmt);
    char *s = vfmt(fmt, ap);
    va_end(ap);
    if (!s) return;
    char sid[128];
    doc_safe_id(sid, sizeof sid, id);
    if (d->fmt == DOC_HTML) {
        fprintf(d->f, "<h%d id=\"%s\">", level, sid);
        html_inline(d->f, s);
        fprintf(d->f, "</h%d>\n", level);
    } else {
        fprintf(d->f, "%.*s <a id=\"%s\"></a>%s\n\n", level, "######", sid, s);
    }
    free(s);
}

/* A paragraph: in HTML inside html_open ... </p>, in Markdown after md_prefix. */
static void paragraph(doc *d, const char *html_open, const char *md_prefix, const char *fmt,
                      va_list ap)
{
    doc_list_end(d);
    char *s = vfmt(fmt, ap);
    if (!s) return;
    if (d->fmt == DOC_HTML) {
        fputs(html_open, d->f);
        html_inline(d->f, s);
        fputs("</p>\n", d->f);
    } else {
        fprintf(d->f, "%s%s\n\n", md_prefix, s);
    }
    free(s);
}

void doc_p(doc *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    paragraph(d, "<p>", "", fmt, ap);
    va_end(ap);
}

void doc_note(doc *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    paragraph(d, "<p class=\"note\">", "> ", fmt, ap);
    va_end(ap);
}

void doc_li(doc *d, int depth, const char *fmt, ...)
{
    if (depth > DOC_MAX_LIST_DEPTH - 1) depth = DOC_MAX_LIST_DEPTH - 1;
    va_list ap;
    va_start(ap, fmt);
    char *s = vfmt(fmt, ap);
    va_end(ap);
    if (!s) return;
    if (d->fmt == DOC_HTML) {
        while (d->depth > depth + 1) {
            if (d->li_open[d->depth - 1]) fputs("</li>", d->f);
            fputs("</ul>\n", d->f);
            d->depth--;
        }
        if (d->depth == depth + 1 && d->li_open[depth]) fputs("</li>\n", d->f);
        while (d->depth < depth + 1) {
            fputs("<ul>\n", d->f);
            d->li_open[d->depth] = false;
            d->depth++;
        }
        fputs("<li>", d->f);
        html_inline(d->f, s);
        d->li_open[depth] = true;
    } else {
        fprintf(d->f, "%*s- %s\n", 2 * depth, "", s);
        d->depth = depth + 1;
    }
    free(s);
}

void doc_list_end(doc *d)
{
    if (!d->depth) return;
    if (d->fmt == DOC_HTML) {
        while (d->depth > 0) {
            if (d->li_open[d->depth - 1]) fputs("</li>", d->f);
            fputs("</ul>\n", d->f);
            d->depth--;
        }
    } else {
        fputs("\n", d->f);
        d->depth = 0;
    }
}

void doc_table(doc *d, const char *align, const char *const *hdr)
{
    doc_list_end(d);
    d->ncols = (int)strlen(align);
    if (d->ncols > DOC_MAX_COLUMNS) d->ncols = DOC_MAX_COLUMNS;
    snprintf(d->align, sizeof d->align, "%.*s", d->ncols, align);
    if (d->fmt == DOC_HTML) {
        fputs("<table>\n<thead><tr>", d->f);
        for (int i = 0; i < d->ncols; i++) {
            fprintf(d->f, "<th class=\"%s\">", align[i] == 'r' ? "r" : "l");
            html_inline(d->f, hdr[i]);
            fputs("</th>", d->f);
        }
        fputs("</tr></thead>\n<tbody>\n", d->f);
    } else {
        fputs("|", d->f);
        for (int i = 0; i < d->ncols; i++) {
            fputs(" ", d->f);
            md_cell(d->f, hdr[i]);
            fputs(" |", d->f);
        }
        fputs("\n|", d->f);
        for (int i = 0; i < d->ncols; i++) fputs(align[i] == 'r' ? " ---: |" : " --- |", d->f);
        fputs("\n", d->f);
    }
}

void doc_row(doc *d, const char *const *cells)
{
    if (d->fmt == DOC_HTML) {
        fputs("<tr>", d->f);
        for (int i = 0; i < d->ncols; i++) {
            fputs(d->align[i] == 'r' ? "<td class=\"r\">" : "<td>", d->f);
            html_inline(d->f, cells[i] ? cells[i] : "");
            fputs("</td>", d->f);
        }
        fputs("</tr>\n", d->f);
    } else {
        fputs("|", d->f);
        for (int i = 0; i < d->ncols; i++) {
            fputs(" ", d->f);
            md_cell(d->f, cells[i] ? cells[i] : "");
            fputs(" |", d->f);
        }
        fputs("\n", d->f);
    }
}

void doc_table_end(doc *d)
{
    if (d->fmt == DOC_HTML) fputs("</tbody>\n</table>\n", d->f);
    else fputs("\n", d->f);
}

void doc_code(doc *d, const char *lang, const char *text)
{
    doc_list_end(d);
    if (d->fmt == DOC_HTML) {
        fprintf(d->f, "<pre><code class=\"language-%s\">", lang);
        html_esc(d->f, text);
        fputs("</code></pre>\n", d->f);
    } else {
        fprintf(d->f, "```%s\n%s%s```\n\n", lang, text,
                text[0] && text[strlen(text) - 1] == '\n' ? "" : "\n");
    }
}

void doc_details(doc *d, const char *summary, const char *lang, const char *text)
{
    doc_list_end(d);
    if (d->fmt == DOC_HTML) {
        fputs("<details><summary>", d->f);
        html_inline(d->f, summary);
        fputs("</summary>\n", d->f);
        doc_code(d, lang, text);
        fputs("</details>\n", d->f);
    } else {
        fprintf(d->f, "%s:\n\n", summary);
        doc_code(d, lang, text);
    }
}

void doc_box_begin(doc *d, const char *id, const char *title)
{
    doc_list_end(d);
    char sid[128];
    doc_safe_id(sid, sizeof sid, id);
    if (d->fmt == DOC_HTML) {
        fprintf(d->f, "<section class=\"box\" id=\"%s\">\n<h3>", sid);
        html_inline(d->f, title);
        fputs("</h3>\n", d->f);
    } else {
        fprintf(d->f, "### <a id=\"%s\"></a>%s\n\n", sid, title);
    }
}

void doc_box_end(doc *d)
{
    doc_list_end(d);
    fputs(d->fmt == DOC_HTML ? "</section>\n" : "---\n\n", d->f);
}

/* The takeaway line above a chart. */
static void chart_takeaway(doc *d, const char *takeaway)
{
    if (!takeaway || !takeaway[0]) return;
    if (d->fmt == DOC_HTML) {
        fputs("<p class=\"takeaway\">", d->f);
        html_inline(d->f, takeaway);
        fputs("</p>\n", d->f);
    } else {
        fprintf(d->f, "**Takeaway:** %s\n\n", takeaway);
    }
}

void doc_chart(doc *d, const chart *c, const char *name, const char *takeaway,
               const char *caption)
{
    doc_list_end(d);
    char msg[CM_ERRLEN];
    if (!chart_available()) {
        chart_takeaway(d, takeaway);
        char title[2 * sizeof c->title + 1]; /* names from input files: quoted, as the alt text */
        doc_plain(title, sizeof title, c->title);
        doc_p(d, "*(Chart \"%s\" not drawn: this build of plan has no cairo; install "
                 "libcairo2-dev and reconfigure with `-Dcharts=enabled`.)*",
              title);
        return;
    }
    char sname[128];
    doc_safe_id(sname, sizeof sname, name);
    if (d->fmt == DOC_HTML) {
        char prefix[64], *svg = NULL;
        snprintf(prefix, sizeof prefix, "c%d-", d->charts);
        if (chart_svg(c, prefix, &svg, NULL, msg, sizeof msg) != CM_OK) {
            if (d->st == CM_OK) {
                d->st = CM_ENOMEM;
                snprintf(d->err, sizeof d->err, "%s", msg);
            }
            return;
        }
        fprintf(d->f, "<figure id=\"chart-%s\">\n", sname);
        chart_takeaway(d, takeaway);
        fprintf(d->f, "%s\n<figcaption>", svg);
        html_inline(d->f, caption);
        fputs("</figcaption>\n</figure>\n", d->f);
        free(svg);
    } else {
        char file[PATH_MAX], path[2 * PATH_MAX + 2];
        char stem[256];
        doc_safe_id(stem, sizeof stem, d->image_stem); /* no spaces or brackets in the link */
        snprintf(file, sizeof file, "%s-%s.png", stem, sname);
        snprintf(path, sizeof path, "%s/%s", d->image_dir, file);
        if (d->npng == d->png_cap) { /* drawn at doc_end */
            int cap = d->png_cap ? 2 * d->png_cap : 16;
            struct doc_png *grown = realloc(d->png, cap * sizeof *grown);
            if (!grown) {
                if (d->st == CM_OK) {
                    d->st = CM_ENOMEM;
                    snprintf(d->err, sizeof d->err, "out of memory for the chart '%.200s'", path);
                }
                return;
            }
            d->png = grown;
            d->png_cap = cap;
        }
        struct doc_png *p = &d->png[d->npng++];
        p->c = *c;
        snprintf(p->path, sizeof p->path, "%s", path);
        chart_takeaway(d, takeaway);
        /* the title holds names from input files: quoted, not markup (issue 18) */
        char alt[2 * sizeof c->title + 1];
        doc_plain(alt, sizeof alt, c->title);
        fprintf(d->f, "![%s](%s)\n\n*%s*\n\n", alt, file, caption);
    }
    d->charts++;
}

void doc_toc(doc *d, int n, const char *const *ids, const char *const *titles)
{
    doc_list_end(d);
    char sid[128];
    if (d->fmt == DOC_HTML) {
        fputs("<nav><ol>", d->f);
        for (int i = 0; i < n; i++) {
            doc_safe_id(sid, sizeof sid, ids[i]);
            fprintf(d->f, "<li><a href=\"#%s\">", sid);
            html_inline(d->f, titles[i]);
            fputs("</a></li>", d->f);
        }
        fputs("</ol></nav>\n", d->f);
    } else {
        for (int i = 0; i < n; i++) {
            doc_safe_id(sid, sizeof sid, ids[i]);
            fprintf(d->f, "%d. [%s](#%s)\n", i + 1, titles[i], sid);
        }
        fputs("\n", d->f);
    }
}
