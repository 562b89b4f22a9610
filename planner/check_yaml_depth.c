/*
 * check_yaml_depth.c — the nesting guard plan check runs before loading a YAML file
 * (check_yaml_depth.h); out of check_yaml.c, which reads the trainer config itself.
 */
#include "check_yaml_depth.h"

#include <yaml.h>

/*
 * libyaml's scanner does work proportional to the flow-nesting depth for every token, so a
 * 40,000-deep "[[[[..." takes seconds to load (issue 18). A trainer config nests a few levels:
 * the events are walked first and the file is refused at the first collection deeper than
 * CHECK_MAX_YAML_DEPTH, before any document is built. Syntax errors are left to the load.
 */
#define CHECK_MAX_YAML_DEPTH 64

cm_status check_yaml_depth(const char *text, size_t len, char *err, size_t errlen)
{
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        return cm_fail(err, errlen, CM_ENOMEM, "out of memory in the YAML parser");
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    cm_status st = CM_OK;
    int depth = 0;
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) break; /* reported by yaml_parser_load */
        yaml_event_type_t type = ev.type;
        if (type == YAML_SEQUENCE_START_EVENT || type == YAML_MAPPING_START_EVENT) depth++;
        if (type == YAML_SEQUENCE_END_EVENT || type == YAML_MAPPING_END_EVENT) depth--;
        if (depth > CHECK_MAX_YAML_DEPTH)
            st = cm_fail(err, errlen, CM_EPARSE,
                         "%lu:%lu: lists and mappings nest deeper than %d levels, the limit for "
                         "a trainer config: this is not one",
                         (unsigned long)ev.start_mark.line + 1,
                         (unsigned long)ev.start_mark.column + 1, CHECK_MAX_YAML_DEPTH);
        yaml_event_delete(&ev);
        if (st != CM_OK || type == YAML_STREAM_END_EVENT) break;
    }
    yaml_parser_delete(&parser);
    return st;
}
