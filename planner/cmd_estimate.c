/*
 * cmd_estimate.c — `plan estimate`: evaluate one given layout (memory, time, feasibility).
 */
#include <stdio.h>

#include "cli.h"
#include "commands.h"
#include "estimate.h"
#include "output.h"

static void usage(void)
{
    printf("usage: plan estimate --model M [--gpus N] [layout] [options]\n"
           "  --framework fsdp2|megatron (default megatron)\n"
           "  --tp N --pp N --dp N --cp N --ep N --etp N --vpp N --mbs N\n"
           "  --sp | --no-sp        Megatron sequence parallel (default on when tp > 1)\n"
           "  --sharding ddp|distopt|fsdp   (fsdp2 default fsdp, megatron default distopt)\n"
           "  --no-reshard-after-forward --shard-size N (HSDP) --offload\n"
           "  --recompute none|selective|full --recompute-layers N\n"
           "  --seq N --gbs N --system NAME|FILE --calibration FILE\n"
           "  --attention flash|unfused --no-overlap --grad-reduce-bf16\n"
           "  --format human|json\n"
           "dp defaults to gpus/(tp*pp*cp) when --gpus is given.\n");
}

int cmd_estimate(int argc, char **argv)
{
    cli_options o;
    bool help;
    int rc = cli_parse(argc, argv, &o, &help);
    if (rc) return rc;
    if (help) {
        usage();
        return 0;
    }
    layout l = o.layout;
    if (!o.sharding_given)
        l.sharding = l.framework == FRAMEWORK_FSDP2 ? SHARDING_FSDP : SHARDING_DISTOPT;
    if (!o.sp_given) l.sp = l.framework == FRAMEWORK_MEGATRON && l.tp > 1;
    long mp = (long)l.tp * l.pp * l.cp;
    if (!o.dp_given) {
        if (o.gpus) {
            if (o.gpus % mp) {
                char msg[200];
                snprintf(msg, sizeof msg,
                         "--gpus %d is not divisible by tp*pp*cp = %ld: change the sizes",
                         o.gpus, mp);
                return cli_error(msg);
            }
            l.dp = (int)(o.gpus / mp);
        } else {
            l.dp = 1;
        }
    }
    model_spec m;
    system_spec sys;
    if ((rc = cli_load_specs(&o, &m, &sys))) return rc;
    char err[CM_ERRLEN];
    if (layout_check(&m, &sys, &o.training, &l, o.gpus, err, sizeof err) != CM_OK)
        return cli_error(err);
    estimate e;
    if (estimate_layout(&m, &sys, &o.training, &l, &e, err, sizeof err) != CM_OK)
        return cli_error(err);
    if (o.format == FORMAT_JSON) {
        json_t *j = output_estimate_json(&e, &m, &sys);
        json_dumpf(j, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
        fputc('\n', stdout);
        json_decref(j);
    } else {
        output_estimate_human(stdout, &e, &m, &sys);
    }
    return 0;
}
