/* commands.h — the subcommands of `plan`, one file each, dispatched from main.c. */
#ifndef PLAN_COMMANDS_H
#define PLAN_COMMANDS_H

int cmd_search(int argc, char **argv);   /* plan [search] --model M --gpus N */
int cmd_estimate(int argc, char **argv); /* plan estimate --tp .. --pp .. */
int cmd_simulate(int argc, char **argv); /* plan simulate [estimate flags] --trace step.json */
int cmd_calibrate(int argc, char **argv); /* plan calibrate [--ops ..] (backend/) */
int cmd_measure(int argc, char **argv);   /* plan measure [estimate flags] (backend/) */
int cmd_refine(int argc, char **argv);    /* plan refine (= plan measure --refine, issue 4) */
int cmd_bench(int argc, char **argv);    /* plan bench --models .. --gpus .. -o x.csv */
int cmd_fit(int argc, char **argv);      /* plan fit calibrate.csv -o profile.json */
int cmd_check(int argc, char **argv);    /* plan check FILE.yaml [--gpus N] */
int cmd_report(int argc, char **argv);   /* plan report -o guide.html|guide.md */
int cmd_compare_systems(int argc, char **argv); /* plan compare-systems (issue 22) */

#endif
