/*
 * form_list.h — a list of sentences naming the parts of a model's form that a framework's own
 * model code cannot build (megatron_form.h for Megatron-LM's GPT layer, titan_form.h for
 * torchtitan's model classes). One type and one way to fill and join it, so that every
 * framework's list reads the same in the search's output, in the JSON and in the emitters'
 * comments.
 */
#ifndef PLAN_FORM_LIST_H
#define PLAN_FORM_LIST_H

#include <stdbool.h>
#include <stddef.h>

/* Most sentences kept per list, and the longest one (with its NUL). */
#define FORM_LIST_MAX 8
#define FORM_LIST_ITEM_CHARS 200

typedef struct {
    char (*items)[FORM_LIST_ITEM_CHARS];
    int n, max;
} form_list;

/* A list writing into items (room for max sentences, at most FORM_LIST_MAX kept). */
form_list form_list_on(char items[][FORM_LIST_ITEM_CHARS], int max);

/* Appends one sentence (printf format); dropped when the list is full. */
void form_list_add(form_list *fl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The n sentences joined with "; " into buf of len bytes; false when n is 0. */
bool form_list_join(const char items[][FORM_LIST_ITEM_CHARS], int n, char *buf, size_t len);

#endif
