/*
 * form_list.c — the sentences a framework's model code cannot build (form_list.h).
 */
#include "form_list.h"

#include <stdarg.h>
#include <stdio.h>

form_list form_list_on(char items[][FORM_LIST_ITEM_CHARS], int max)
{
    form_list fl = {items, 0, max < FORM_LIST_MAX ? max : FORM_LIST_MAX};
    return fl;
}

void form_list_add(form_list *fl, const char *fmt, ...)
{
    if (fl->n >= fl->max) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(fl->items[fl->n++], FORM_LIST_ITEM_CHARS, fmt, ap);
    va_end(ap);
}

bool form_list_join(const char items[][FORM_LIST_ITEM_CHARS], int n, char *buf, size_t len)
{
    size_t used = 0;
    if (len) buf[0] = '\0';
    for (int i = 0; i < n && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? "; " : "", items[i]);
    return n > 0;
}
