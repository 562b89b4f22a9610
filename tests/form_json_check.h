/*
 * form_json_check.h — for the end-to-end tests of what a framework's own model code cannot
 * build (test_megatron_form.c: megatron_trains_without; test_titan_form.c:
 * torchtitan_model_code_lacks): every plan of `plan <args>` (JSON) carries the key; the plans
 * of the framework carry a list (first_item its first sentence, NULL: empty), the others
 * null. Included by a cmocka test after plan_run.h and cmocka.h.
 */
#ifndef PLAN_TESTS_FORM_JSON_CHECK_H
#define PLAN_TESTS_FORM_JSON_CHECK_H

#include <jansson.h>
#include <string.h>

#include "plan_run.h"

static void check_form_json(plan_run_result *r, const char *args, const char *key,
                            const char *framework, const char *first_item)
{
    assert_int_equal(plan_run(r, args), 0);
    if (r->status != 0) fail_msg("plan %s exited %d: %s", args, r->status, r->err);
    json_error_t je;
    json_t *j = json_loads(r->out, 0, &je);
    if (!j) fail_msg("plan %s: output is not JSON (%s)", args, je.text);
    json_t *plans = json_object_get(j, "plans");
    assert_true(json_array_size(plans) > 0);
    int ours = 0;
    size_t i;
    json_t *p;
    json_array_foreach(plans, i, p) {
        json_t *list = json_object_get(p, key);
        assert_non_null(list);
        const char *fw = json_string_value(json_object_get(json_object_get(p, "layout"),
                                                           "framework"));
        if (strcmp(fw, framework)) {
            assert_true(json_is_null(list));
            continue;
        }
        ours++;
        assert_true(json_is_array(list));
        if (!first_item) {
            assert_int_equal(json_array_size(list), 0);
        } else {
            assert_true(json_array_size(list) > 0);
            assert_string_equal(json_string_value(json_array_get(list, 0)), first_item);
        }
    }
    assert_true(ours > 0);
    json_decref(j);
}

#endif
