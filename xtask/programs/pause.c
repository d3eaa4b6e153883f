/* The pod sandbox's process (the "pause" image): holds the pod's namespaces, reaps the
 * zombies of a pod that shares its process namespace, and exits when told to stop. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int signal)
{
	(void)signal;
	_exit(0);
}

static void reap(int signal)
{
	(void)signal;
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

int main(void)
{
	struct sigaction action = { 0 };

	action.sa_handler = stop;
	sigaction(SIGINT, &action, NULL);
	sigaction(SIGTERM, &action, NULL);
	action.sa_handler = reap;
	action.sa_flags = SA_NOCLDSTOP;
	sigaction(SIGCHLD, &action, NULL);
	for (;;)
		pause();
}
