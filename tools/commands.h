/* SPDX-License-Identifier: BSD-2-Clause */
/* The cblob program's commands; each takes the arguments after its name and returns the exit
 * status (tool.h). */
#ifndef CBLOB_TOOLS_COMMANDS_H
#define CBLOB_TOOLS_COMMANDS_H

int command_inspect(int argc, char **argv);
int command_convert(int argc, char **argv);
int command_diff(int argc, char **argv);
int command_upgrade(int argc, char **argv);

#endif
