/*
 * test_doc_writer.c — unit tests of planner/doc_writer.c, the document writer of `plan report`:
 * how it quotes text for each format. HTML escapes & < > " (attributes are double-quoted, so '
 * stays as it is); Markdown table cells escape | and turn line breaks into spaces; text that is
 * not ours, passed through doc_plain(), reads as itself in both formats; anchors keep only
 * letters, digits, '-' and '_'. Each test writes a few blocks to a temporary file and compares
 * the bytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "doc_writer.h"

static FILE *out;
static char text[8192];

static doc *start(doc *d, doc_format fmt)
{
    out = tmpfile();
    assert_non_null(out);
    doc_init(d, out, fmt, "/tmp/dir/guide.md");
    return d;
}

/* Everything written since start(), NUL-terminated in text. */
static const char *written(void)
{
    fflush(out);
    rewind(out);
    size_t n = fread(text, 1, sizeof text - 1, out);
    text[n] = '\0';
    fclose(out);
    out = NULL;
    return text;
}

static void test_html_special_chars(void **state)
{
    (void)state;
    doc d;
    start(&d, DOC_HTML);
    doc_p(&d, "a & b < c > d \"e\" 'f'");
    doc_p(&d, "`x<y && \"z\"` **<b>** [a&b](https://x.org/?a=1&b=\"2\")");
    doc_code(&d, "sh", "echo '<a href=\"x\">' && true\n");
    assert_string_equal(written(),
                        "<p>a &amp; b &lt; c &gt; d &quot;e&quot; 'f'</p>\n"
                        "<p><code>x&lt;y &amp;&amp; &quot;z&quot;</code> "
                        "<strong>&lt;b&gt;</strong> "
                        "<a href=\"https://x.org/?a=1&amp;b=&quot;2&quot;\">a&amp;b</a></p>\n"
                        "<pre><code class=\"language-sh\">echo '&lt;a href=&quot;x&quot;&gt;' "
                        "&amp;&amp; true\n</code></pre>\n");
}

static void test_html_title_and_table(void **state)
{
    (void)state;
    doc d;
    start(&d, DOC_HTML);
    doc_begin(&d, "A <b> & \"c\"", "p{}");
    const char *hdr[] = {"x|y", "n"};
    doc_table(&d, "lr", hdr);
    const char *row[] = {"<i>&", NULL};
    doc_row(&d, row);
    doc_table_end(&d);
    doc_end(&d);
    const char *s = written();
    assert_non_null(
        strstr(s, "<title>A &lt;b&gt; &amp; &quot;c&quot;</title>\n<style>p{}</style>"));
    assert_non_null(strstr(s, "<thead><tr><th class=\"l\">x|y</th><th class=\"r\">n</th></tr>"));
    assert_non_null(strstr(s, "<tr><td>&lt;i&gt;&amp;</td><td class=\"r\"></td></tr>\n"));
    assert_non_null(strstr(s, "</tbody>\n</table>\n</body>\n</html>\n"));
}

static void test_markdown_table_cells(void **state)
{
    (void)state;
    doc d;
    char esc[256];
    start(&d, DOC_MARKDOWN);
    const char *hdr[] = {"a|b", "n"};
    doc_table(&d, "lr", hdr);
    /* a pipe, a pipe in a code span, a line break, a pipe already quoted by doc_plain */
    doc_plain(esc, sizeof esc, "rule: tp|pp");
    const char *row[] = {"x | y", "`p|q`"};
    doc_row(&d, row);
    const char *row2[] = {"line 1\nline 2\r\n3", esc};
    doc_row(&d, row2);
    doc_table_end(&d);
    assert_string_equal(written(), "| a\\|b | n |\n"
                                   "| --- | ---: |\n"
                                   "| x \\| y | `p\\|q` |\n"
                                   "| line 1 line 2  3 | rule: tp\\|pp |\n"
                                   "\n");
}

static void test_markdown_blocks(void **state)
{
    (void)state;
    doc d;
    start(&d, DOC_MARKDOWN);
    doc_h(&d, 2, "a b/c", "Title & <more>");
    doc_li(&d, 0, "one");
    doc_li(&d, 1, "two");
    doc_p(&d, "after");
    doc_code(&d, "yaml", "k: v");
    const char *ids[] = {"x", "y z"};
    const char *titles[] = {"X", "Y"};
    doc_toc(&d, 2, ids, titles);
    assert_string_equal(written(), "## <a id=\"a-b-c\"></a>Title & <more>\n\n"
                                   "- one\n  - two\n\n"
                                   "after\n\n"
                                   "```yaml\nk: v\n```\n\n"
                                   "1. [X](#x)\n2. [Y](#y-z)\n\n");
}

/* Text that is not ours reads as itself in both formats after doc_plain. */
static void test_plain_and_code_safe(void **state)
{
    (void)state;
    const char *raw = "a*b_c `d` [e](f) <g> #h \\i |j & 'k'";
    char esc[256];
    doc_plain(esc, sizeof esc, raw);
    assert_string_equal(esc, "a\\*b\\_c \\`d\\` \\[e\\](f) \\<g\\> \\#h \\\\i \\|j & 'k'");
    doc d;
    start(&d, DOC_HTML);
    doc_p(&d, "%s", esc);
    assert_string_equal(written(),
                        "<p>a*b_c `d` [e](f) &lt;g&gt; #h \\i |j &amp; 'k'</p>\n");
    start(&d, DOC_MARKDOWN);
    doc_p(&d, "%s", esc);
    assert_string_equal(written(),
                        "a\\*b\\_c \\`d\\` \\[e\\](f) \\<g\\> \\#h \\\\i \\|j & 'k'\n\n");

    doc_code_safe(esc, sizeof esc, "dir/`x`\\y.json");
    assert_string_equal(esc, "dir/'x''y.json");
    /* a line break would start a Markdown block of its own ("- item"): a space */
    doc_plain(esc, sizeof esc, "x\n- y\r\n1. z\t");
    assert_string_equal(esc, "x - y  1. z ");
    /* a short buffer truncates whole escapes, never splits one */
    doc_plain(esc, 6, "a|b|c");
    assert_string_equal(esc, "a\\|");
}

/* The HTML list closes its items and levels in order. */
static void test_html_list(void **state)
{
    (void)state;
    doc d;
    start(&d, DOC_HTML);
    doc_li(&d, 0, "a");
    doc_li(&d, 1, "b & c");
    doc_li(&d, 0, "d");
    doc_list_end(&d);
    assert_string_equal(written(), "<ul>\n<li>a<ul>\n<li>b &amp; c</li></ul>\n</li>\n<li>d"
                                   "</li></ul>\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_html_special_chars),
        cmocka_unit_test(test_html_title_and_table),
        cmocka_unit_test(test_markdown_table_cells),
        cmocka_unit_test(test_markdown_blocks),
        cmocka_unit_test(test_plain_and_code_safe),
        cmocka_unit_test(test_html_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
