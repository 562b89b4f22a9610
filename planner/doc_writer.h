/*
 * doc_writer.h — a small document writer for `plan report`: headings, paragraphs, nested lists,
 * tables, code blocks and charts, emitted either as HTML (one self-contained file, charts as
 * inline SVG) or as Markdown (charts as PNG files beside the document).
 *
 * Text given to the block functions is "our" text in a tiny inline markup that both formats
 * share: `code`, **bold**, [text](url), and \x for a literal x. Text that is not ours (rule
 * messages, file names, descriptions from input files) must go through doc_plain() (or
 * doc_code_safe() inside a code span) before it is put into our text, so neither format reads it
 * as markup. All quoting for both formats lives in doc_writer.c: HTML escapes & < > " (every
 * attribute is double-quoted, so ' needs no escape), Markdown table cells escape | and turn
 * line breaks into spaces.
 *
 * The writer only writes to the FILE it is given; it neither opens nor closes it. A chart that
 * cannot be drawn is recorded in st/err (the first failure) and the document goes on.
 */
#ifndef PLAN_DOC_WRITER_H
#define PLAN_DOC_WRITER_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "chart.h"
#include "status.h"

typedef enum { DOC_HTML = 0, DOC_MARKDOWN = 1 } doc_format;

#define DOC_MAX_COLUMNS 39
#define DOC_MAX_LIST_DEPTH 7

typedef struct {
    FILE *f;
    doc_format fmt;
    char image_dir[PATH_MAX];  /* Markdown: the directory of the document, where PNGs go */
    char image_stem[256];      /* Markdown: the document's file name without extension */
    /* writer state */
    int ncols;
    char align[DOC_MAX_COLUMNS + 1]; /* the open table's column alignment, 'l' or 'r' */
    int depth;                       /* open list levels */
    bool li_open[DOC_MAX_LIST_DEPTH + 1];
    /* Markdown: the PNG charts, written by doc_end on every core (doc_writer.c) */
    struct doc_png *png;
    int npng, png_cap;
    /* results, read after doc_end */
    int charts;                /* charts drawn */
    int images;                /* image files written (Markdown) */
    cm_status st;              /* first failure (a chart that could not be drawn or written) */
    char err[CM_ERRLEN];
} doc;

/* Start writing to f in fmt. path is the document's path: Markdown charts are written beside it
 * as <stem>-<name>.png. */
void doc_init(doc *d, FILE *f, doc_format fmt, const char *path);

/* HTML: the doctype, head (title, inline style sheet css) and <body>; Markdown: nothing. */
void doc_begin(doc *d, const char *title, const char *css);
/* Closes an open list; HTML: </body></html>; Markdown: writes the PNG charts, not yet in
 * place: then doc_publish (once the document itself is written) or doc_abort, always. */
void doc_end(doc *d);
/* Puts the charts doc_end wrote in place; on a failure (d->st, or a rename) the rest are
 * dropped and err says why. */
cm_status doc_publish(doc *d, char *err, size_t errlen);
/* Drops the charts doc_end wrote, leaving any old ones as they were. */
void doc_abort(doc *d);

/* A heading of level 1..6 with an anchor id (made safe by doc_safe_id). */
void doc_h(doc *d, int level, const char *id, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void doc_p(doc *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A paragraph set apart as a note (HTML: <p class="note">, drawn dashed: a placeholder or an
 * aside; Markdown: a block quote). */
void doc_note(doc *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A list item at nesting depth (0 = top level); the list ends at the next non-list block. */
void doc_li(doc *d, int depth, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void doc_list_end(doc *d);

/* A table: align is one letter per column, 'l' or 'r'; hdr has as many cells. Rows follow with
 * doc_row (a NULL cell is empty) and the table ends with doc_table_end. */
void doc_table(doc *d, const char *align, const char *const *hdr);
void doc_row(doc *d, const char *const *cells);
void doc_table_end(doc *d);

/* A code block in language lang; text is literal (not our markup). */
void doc_code(doc *d, const char *lang, const char *text);
/* A code block folded under a summary line in HTML (a paragraph and block in Markdown). */
void doc_details(doc *d, const char *summary, const char *lang, const char *text);
/* A chart: inline SVG in HTML, a PNG beside the Markdown file. name is unique per document.
 * takeaway (our text; NULL: none) is the one line a reader should take from it, written above
 * the chart; caption (our text) says how to read it. Without cairo, a paragraph saying the
 * chart was not drawn, and the takeaway still. */
void doc_chart(doc *d, const chart *c, const char *name, const char *takeaway,
               const char *caption);
/* A framed box (HTML: <section class="box" id=...> with its title as a heading of level 3;
 * Markdown: the heading, then the box's blocks, then a rule). Boxes do not nest. */
void doc_box_begin(doc *d, const char *id, const char *title);
void doc_box_end(doc *d);
/* A numbered table of contents linking to the headings with the n ids. */
void doc_toc(doc *d, int n, const char *const *ids, const char *const *titles);

/* Quote text that is not ours for our markup: neither format then reads it as markup (control
 * characters, line breaks among them, become spaces). */
void doc_plain(char *dst, size_t n, const char *src);
/* Text that is not ours, for inside a `code span`: Markdown takes it literally, so only the
 * characters that would end the span (backquote) or start an escape (backslash) change. */
void doc_code_safe(char *dst, size_t n, const char *src);
/* An id/anchor safe in both formats: letters, digits, '-' and '_' (others become '-'). */
void doc_safe_id(char *dst, size_t n, const char *src);

#endif
