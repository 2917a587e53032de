#ifndef CPROCESS_CONTROL_H
#define CPROCESS_CONTROL_H

/// Makes the calling process a child subreaper (PR_SET_CHILD_SUBREAPER); 0 or -1 with errno.
int cprocess_set_child_subreaper(void);

/// 1 when the calling process is a child subreaper, 0 when not, -1 on error.
int cprocess_is_child_subreaper(void);

/// pipe2(fds, O_CLOEXEC): both ends close on exec, atomically (no other thread's spawn inherits them).
int cprocess_pipe_cloexec(int fds[2]);

/// setns(fd, CLONE_NEWNET): moves the calling THREAD into the network namespace open at `fd`;
/// 0 or -1 with errno. Call it only on a thread made for that purpose (setns is per thread).
int cprocess_enter_netns(int fd);

#endif
