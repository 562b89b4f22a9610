/*
 * system_list.c — --systems and --price-per-gpu-hour (system_list.h).
 */
#include "system_list.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_number.h"
#include "profile.h"

int cli_system_list_load(const char *systems_arg, const char *prices_arg, cli_nvls nvls,
                         double power_limit_w, cli_system_list *out)
{
    memset(out, 0, sizeof *out);
    char buf[2048], msg[300], err[CM_ERRLEN];
    if (!systems_arg || !*systems_arg)
        return cli_error("--systems needs a comma-separated list of systems (e.g. "
                         "h100,h200,gb200-nvl72; plan --system help lists the presets)");
    snprintf(buf, sizeof buf, "%s", systems_arg);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (out->n == SYSTEM_COMPARE_MAX) {
            snprintf(msg, sizeof msg, "--systems takes at most %d systems", SYSTEM_COMPARE_MAX);
            return cli_error(msg);
        }
        int i = out->n++;
        snprintf(out->names[i], sizeof out->names[i], "%s", tok);
        out->name_ptrs[i] = out->names[i];
        if (profile_load_system(tok, cli_data_dir(), &out->sys[i], err, sizeof err) != CM_OK)
            return cli_error(err);
        /* --nvls on compares each system at its best: NVLS where it has it */
        cli_nvls k = nvls == CLI_NVLS_ON && out->sys[i].nvls_busbw_bytes_per_s <= 0
                         ? CLI_NVLS_UNSET
                         : nvls;
        int rc = cli_apply_system_knobs(k, power_limit_w, &out->sys[i]);
        if (rc) return rc;
    }
    if (!out->n) return cli_error("--systems needs a comma-separated list of systems");
    if (!prices_arg) return 0;
    snprintf(buf, sizeof buf, "%s", prices_arg);
    int np = 0;
    double p[SYSTEM_COMPARE_MAX];
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        char *end;
        double v = strtod(tok, &end);
        if (np == SYSTEM_COMPARE_MAX || end == tok || *end || !(v > 0 && v < 1e6)) {
            snprintf(msg, sizeof msg,
                     "--price-per-gpu-hour needs positive numbers (one for all systems or one "
                     "per system), got '%s'",
                     tok);
            return cli_error(msg);
        }
        p[np++] = v;
    }
    if (np != 1 && np != out->n) {
        snprintf(msg, sizeof msg,
                 "--price-per-gpu-hour has %d prices for %d systems: give one for all or one "
                 "per system, in the order of --systems",
                 np, out->n);
        return cli_error(msg);
    }
    for (int i = 0; i < out->n; i++) out->prices[i] = p[np == 1 ? 0 : i];
    return 0;
}
