/* sim_areduce.h — fold-sim's asynchronous-reduction experiments (areduce-full, areduce-partial). */
#ifndef FOLD_TOOLS_SIM_AREDUCE_H
#define FOLD_TOOLS_SIM_AREDUCE_H
/* argv[1] is "areduce-full" or "areduce-partial". Exit status: 0, 1 a run failed, 2 bad arguments. */
int fold_sim_areduce_main(int argc, char **argv);
#endif
