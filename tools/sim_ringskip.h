/* sim_ringskip.h — fold-sim's straggler experiment (ring-skip, issue 10). */
#ifndef FOLD_TOOLS_SIM_RINGSKIP_H
#define FOLD_TOOLS_SIM_RINGSKIP_H
/* argv[1] is "ring-skip". Exit status: 0, 1 a run failed, 2 bad arguments. */
int fold_sim_ringskip_main(int argc, char **argv);
#endif
