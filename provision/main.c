/* provision: the entry point only dispatches (see cli/cmd.c). */
#include "cli/cmd.h"

int main(int argc, char **argv)
{
	return cmd_main(argc, argv);
}
