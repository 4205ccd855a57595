/*
 * The first process inside a command's sandbox: build its filesystem, then exec.
 *
 * roles.tools.sandbox runs it as
 *   unshare --mount --pid --fork --kill-child [--user --map-root-user] [--net]
 *     -- artoo-sandbox-init OPTIONS -- ARGV...
 * so it starts as root of fresh mount and PID namespaces. It mounts a tmpfs as
 * the new root, binds the system directories read-only, gives the command its
 * own /dev, /proc and /tmp, mounts one overlay per writable path (the upper dir
 * records every change the command makes), hides the masked paths, pivots into
 * the new root, sets the resource limits, drops to an unprivileged uid, sets
 * no_new_privs, installs a seccomp filter that refuses the kernel's
 * namespace, mount, key, bpf, perf, ptrace and module surface, and execs.
 *
 * Options (the order of the steps is fixed, not that of the options):
 *   -r ROOT  -t TMP  -c CWD           the new root, the run's scratch, the cwd
 *   -u UID | -n                       the uid to drop to, or a nested user
 *                                     namespace (rootless workers)
 *   -s PATH                           a system path shown read-only
 *   -a NAME TARGET                    an alias in /.artoo/bin
 *   -L TARGET LOWER UPPER WORK        an overlay mounted before the masks
 *   -m PATH                           a path hidden under an empty tmpfs
 *   -O TARGET LOWER UPPER WORK        an overlay mounted after the masks
 *   -g UID GID VIEW                   the next overlay's lower is seen through
 *                                     an idmapped mount at VIEW (a scratch dir
 *                                     the command never sees) on which files
 *                                     of UID:GID, the allowed path's owner,
 *                                     belong to the command's uid: it writes
 *                                     there as that owner would
 *   -l cpu|as|nproc|fsize|nofile N    a resource limit (soft and hard)
 *   -e NAME=VALUE                     one variable of the command's environment
 *
 * Any failure before the exec prints "artoo-sandbox-error: <step>: <why>" on
 * stderr and exits 125 (roles/tools/sandbox_init.py holds both for Python).
 * Plain C99 and Linux headers: it is built by the Makefile with gcc.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <net/if.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#else
#error "the sandbox init's seccomp filter knows x86_64 and aarch64 only"
#endif

#define ERROR_EXIT 125
#define MAX_ITEMS 256
#define INNER_ID 1000 /* the command's uid and gid in a nested user namespace */
#define ALIAS_DIR "/.artoo/bin"

#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif
#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif
#define TREE_CLONE 1          /* OPEN_TREE_CLONE */
#define TREE_CLOEXEC 02000000 /* OPEN_TREE_CLOEXEC */
#define MOVE_EMPTY_PATH 4     /* MOVE_MOUNT_F_EMPTY_PATH */
#define ATTR_IDMAP 0x100000   /* MOUNT_ATTR_IDMAP */
#define ATTR_RDONLY 0x1 /* MOUNT_ATTR_RDONLY */
#define ATTR_NOSUID 0x2 /* MOUNT_ATTR_NOSUID */

struct layer {
    const char *target, *lower, *upper, *work;
    const char *view; /* NULL, or where the idmapped lower is attached */
    long owner_uid, owner_gid;
};

struct list {
    const char *item[MAX_ITEMS];
    int n;
};

struct spec {
    const char *root, *tmp, *cwd;
    long uid; /* -1: a nested user namespace */
    struct list system, masks, aliases, env;
    struct layer shared[MAX_ITEMS], own[MAX_ITEMS];
    int n_shared, n_own;
    struct layer next; /* the -g given for the next layer */
    struct rlimit limit[5];
    char *const *argv;
};

static const int LIMIT_RESOURCE[5] = {
    RLIMIT_CPU, RLIMIT_AS, RLIMIT_NPROC, RLIMIT_FSIZE, RLIMIT_NOFILE};
static const char *const LIMIT_NAME[5] = {"cpu", "as", "nproc", "fsize", "nofile"};
static const char *const DEVICES[] = {"null", "zero", "full", "random", "urandom",
                                      "tty"};

static void fail(const char *step, const char *what, int err)
{
    fprintf(stderr, "artoo-sandbox-error: %s%s%s: %s\n", step, what ? " " : "",
            what ? what : "", err ? strerror(err) : "invalid");
    exit(ERROR_EXIT);
}

static void check(int result, const char *step, const char *what)
{
    if (result != 0)
        fail(step, what, errno);
}

#define PATH_SIZE 4096

static void write_file(const char *path, const char *text);

/* Write a + b + c into out (PATH_SIZE bytes); a path that does not fit fails. */
static char *join(char *out, const char *a, const char *b, const char *c)
{
    if (snprintf(out, PATH_SIZE, "%s%s%s", a, b, c) >= PATH_SIZE)
        fail("path too long", a, ENAMETOOLONG);
    return out;
}

/* Return root + path in a buffer of its own ("/" is the root itself). */
static char *inside(const char *root, const char *path)
{
    static char buf[4][PATH_SIZE];
    static int next;
    return join(buf[next++ % 4], root, strcmp(path, "/") == 0 ? "" : path, "");
}

static int lexists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static void make_dirs(const char *path)
{
    char buf[PATH_SIZE];
    join(buf, path, "", "");
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            fail("mkdir", buf, errno);
        *p = '/';
    }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST)
        fail("mkdir", buf, errno);
}

static void do_mount(const char *src, const char *target, const char *type,
                     unsigned long flags, const char *data, const char *step)
{
    check(mount(src, target, type, flags, data), step, target);
}

/* Make the mount at target (and below it, if recursive) read-only, nosuid. */
static void read_only(const char *target, int recursive)
{
    unsigned long long attr[4] = {ATTR_RDONLY | ATTR_NOSUID, 0, 0, 0};
    long r = syscall(SYS_mount_setattr, AT_FDCWD, target,
                     recursive ? AT_RECURSIVE : 0, attr, sizeof attr);
    check(r == 0 ? 0 : -1, "read-only", target);
}

/* Show a system directory read-only (a symlink such as /bin stays one). */
static void bind_system(const char *root, const char *path)
{
    char link[PATH_SIZE];
    char *target = inside(root, path);
    ssize_t n = readlink(path, link, sizeof link - 1);
    if (n >= 0) {
        link[n] = '\0';
        check(symlink(link, target), "symlink", target);
        return;
    }
    make_dirs(target);
    do_mount(path, target, NULL, MS_BIND | MS_REC, NULL, "bind");
    read_only(target, 1);
}

/* Give the command a minimal /dev: a few device nodes and its own /dev/shm. */
static void make_dev(const char *root)
{
    static const char *const links[4][2] = {{"fd", "/proc/self/fd"},
                                            {"stdin", "/proc/self/fd/0"},
                                            {"stdout", "/proc/self/fd/1"},
                                            {"stderr", "/proc/self/fd/2"}};
    char path[PATH_SIZE], host[PATH_SIZE];
    char *dev = inside(root, "/dev");
    make_dirs(dev);
    do_mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k",
             "mount");
    for (size_t i = 0; i < sizeof DEVICES / sizeof *DEVICES; i++) {
        join(host, "/dev/", DEVICES[i], "");
        if (access(host, F_OK) != 0)
            continue;
        join(path, dev, "/", DEVICES[i]);
        int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
        if (fd < 0)
            fail("create", path, errno);
        close(fd);
        do_mount(host, path, NULL, MS_BIND, NULL, "bind");
    }
    for (int i = 0; i < 4; i++) {
        join(path, dev, "/", links[i][0]);
        check(symlink(links[i][1], path), "symlink", path);
    }
    join(path, dev, "/shm", "");
    check(mkdir(path, 0777), "mkdir", path);
    do_mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777", "mount");
}

/* Link each missing command name to the one it stands for (python: python3). */
static void add_aliases(const char *root, const struct list *aliases)
{
    static const char *const shown[3] = {"/usr/bin/", "/bin/", "/usr/local/bin/"};
    char path[PATH_SIZE], alias_dir[PATH_SIZE];
    join(alias_dir, root, ALIAS_DIR, "");
    make_dirs(alias_dir);
    for (int i = 0; i + 1 < aliases->n; i += 2) {
        const char *name = aliases->item[i], *target = aliases->item[i + 1];
        int present = 0;
        for (int d = 0; d < 3; d++) {
            join(path, root, shown[d], name);
            present |= lexists(path);
        }
        if (present || !lexists(inside(root, target)))
            continue;
        join(path, alias_dir, "/", name);
        check(symlink(target, path), "symlink", path);
    }
}

/* Return a user namespace (an fd) in which id ``owner`` is ``uid`` outside.
   ``proc`` is the new root's /proc: the host's shows other pids. */
static int owner_namespace(const char *proc, long owner_uid, long owner_gid, long uid)
{
    char path[PATH_SIZE], map[64];
    int ready[2], hold[2];
    check(pipe2(ready, O_CLOEXEC) || pipe2(hold, O_CLOEXEC), "pipe", NULL);
    pid_t child = fork();
    if (child < 0)
        fail("fork", NULL, errno);
    if (child == 0) {
        /* It waits for EOF on hold: only the parent may keep its write end. */
        close(hold[1]);
        char byte = unshare(CLONE_NEWUSER) == 0;
        if (write(ready[1], &byte, 1) != 1 || read(hold[0], &byte, 1) < 0)
            _exit(1);
        _exit(0);
    }
    char byte = 0;
    if (read(ready[0], &byte, 1) != 1 || !byte)
        fail("idmap", "user namespace", EPERM);
    snprintf(path, sizeof path, "%s/%d/uid_map", proc, (int)child);
    snprintf(map, sizeof map, "%ld %ld 1", owner_uid, uid);
    write_file(path, map);
    snprintf(path, sizeof path, "%s/%d/gid_map", proc, (int)child);
    snprintf(map, sizeof map, "%ld %ld 1", owner_gid, uid);
    write_file(path, map);
    snprintf(path, sizeof path, "%s/%d/ns/user", proc, (int)child);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        fail("open", path, errno);
    close(hold[1]);
    waitpid(child, NULL, 0);
    close(ready[0]);
    close(ready[1]);
    close(hold[0]);
    return fd;
}

/* Attach layer->lower at layer->view with the owner's files given to uid. */
static void idmap_lower(const char *root, const struct layer *layer, long uid)
{
    int ns = owner_namespace(inside(root, "/proc"), layer->owner_uid,
                             layer->owner_gid, uid);
    int tree = syscall(SYS_open_tree, AT_FDCWD, layer->lower, TREE_CLONE | TREE_CLOEXEC);
    if (tree < 0)
        fail("open_tree", layer->lower, errno);
    unsigned long long attr[4] = {ATTR_IDMAP, 0, 0, (unsigned long long)ns};
    long r = syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH, attr, sizeof attr);
    check(r == 0 ? 0 : -1, "idmap", layer->lower);
    r = syscall(SYS_move_mount, tree, "", AT_FDCWD, layer->view, MOVE_EMPTY_PATH);
    check(r == 0 ? 0 : -1, "move_mount", layer->view);
    close(tree);
    close(ns);
}

/* Mount the copy-on-write view of one writable path. */
static void mount_overlay(const char *root, const struct layer *layer, int userns,
                          long uid)
{
    char options[16384];
    char *target = inside(root, layer->target);
    const char *lower = layer->view ? layer->view : layer->lower;
    const char *parts[3] = {lower, layer->upper, layer->work};
    for (int i = 0; i < 3; i++)
        /* These would be read as option separators or escapes by overlayfs. */
        if (strpbrk(parts[i], ",:\\"))
            fail("overlay", parts[i], EINVAL);
    make_dirs(target);
    if (layer->view)
        idmap_lower(root, layer, uid);
    int n = snprintf(options, sizeof options, "lowerdir=%s,upperdir=%s,workdir=%s%s",
                     lower, layer->upper, layer->work,
                     userns ? ",userxattr" : "");
    if (n >= (int)sizeof options)
        fail("overlay", target, ENAMETOOLONG);
    do_mount("overlay", target, "overlay", MS_NOSUID, options, "overlay");
}

/* Make root the root and detach the old one, so nothing else is reachable. */
static void pivot(const char *root)
{
    check(chdir(root), "chdir", root);
    check(syscall(SYS_pivot_root, ".", ".") == 0 ? 0 : -1, "pivot_root", NULL);
    check(umount2(".", MNT_DETACH), "detach old root", NULL);
    check(chdir("/"), "chdir", "/");
}

/* Bring the loopback of a fresh network namespace up, so a command can serve
   itself on 127.0.0.1; where it cannot (the host's network), leave it. */
static void loopback_up(void)
{
    struct ifreq ifr;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return;
    memset(&ifr, 0, sizeof ifr);
    strcpy(ifr.ifr_name, "lo");
    if (ioctl(fd, SIOCGIFFLAGS, &ifr) == 0 && !(ifr.ifr_flags & IFF_UP)) {
        ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
        (void)ioctl(fd, SIOCSIFFLAGS, &ifr);
    }
    close(fd);
}

static void build(const struct spec *s)
{
    struct list masked = {.n = 0};
    struct stat st;
    int userns = s->uid < 0;
    do_mount("tmpfs", s->root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755", "root");
    for (int i = 0; i < s->system.n; i++)
        if (lexists(s->system.item[i]))
            bind_system(s->root, s->system.item[i]);
    make_dev(s->root);
    add_aliases(s->root, &s->aliases);
    char *proc = inside(s->root, "/proc");
    make_dirs(proc);
    do_mount("proc", proc, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL, "mount");
    char *tmp = inside(s->root, "/tmp");
    make_dirs(tmp);
    do_mount(s->tmp, tmp, NULL, MS_BIND, NULL, "bind tmp");
    for (int i = 0; i < s->n_shared; i++)
        mount_overlay(s->root, &s->shared[i], userns, s->uid);
    for (int i = 0; i < s->masks.n; i++) {
        char *target = inside(s->root, s->masks.item[i]);
        if (stat(target, &st) != 0 || !S_ISDIR(st.st_mode))
            continue;
        do_mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV,
                 "size=4k,mode=0755", "mount");
        masked.item[masked.n++] = s->masks.item[i];
    }
    for (int i = 0; i < s->n_own; i++)
        mount_overlay(s->root, &s->own[i], userns, s->uid);
    /* Read-only only now: the own layers were mounted on top of the masks. */
    for (int i = 0; i < masked.n; i++)
        read_only(inside(s->root, masked.item[i]), 0);
    pivot(s->root);
    read_only("/", 0);
    loopback_up();
}

static void set_limits(const struct spec *s)
{
    struct rlimit none = {0, 0};
    for (int i = 0; i < 5; i++)
        if (s->limit[i].rlim_max)
            check(setrlimit(LIMIT_RESOURCE[i], &s->limit[i]), "setrlimit",
                  LIMIT_NAME[i]);
    check(setrlimit(RLIMIT_CORE, &none), "setrlimit", "core");
}

static void write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        fail("open", path, errno);
    ssize_t n = write(fd, text, strlen(text));
    if (n != (ssize_t)strlen(text))
        fail("write", path, n < 0 ? errno : EIO);
    close(fd);
}

/* Become an unprivileged user with no capabilities and no way back. */
static void drop_privileges(long uid)
{
    char map[64];
    if (uid < 0) {
        /* Rootless: a nested user namespace maps INNER_ID to the caller's uid. */
        check(unshare(CLONE_NEWUSER), "unshare user namespace", NULL);
        write_file("/proc/self/setgroups", "deny");
        snprintf(map, sizeof map, "%d 0 1", INNER_ID);
        write_file("/proc/self/uid_map", map);
        write_file("/proc/self/gid_map", map);
        uid = INNER_ID;
    } else {
        check(setgroups(0, NULL), "setgroups", NULL);
    }
    check(setresgid(uid, uid, uid), "setresgid", NULL);
    check(setresuid(uid, uid, uid), "setresuid", NULL);
    check(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs", NULL);
}


/* The kernel surface a command never needs, refused with EPERM. */
static const int DENIED[] = {
    SYS_setns, SYS_mount, SYS_umount2, SYS_pivot_root, SYS_move_mount,
    SYS_open_tree, SYS_fsopen, SYS_fsmount, SYS_fsconfig, SYS_fspick,
    SYS_mount_setattr, SYS_keyctl, SYS_add_key, SYS_request_key, SYS_bpf,
    SYS_perf_event_open, SYS_process_vm_readv, SYS_process_vm_writev,
    SYS_kexec_load, SYS_kexec_file_load, SYS_init_module, SYS_finit_module,
    SYS_delete_module, SYS_open_by_handle_at, SYS_name_to_handle_at,
    SYS_userfaultfd,
    /* io_uring runs file and socket operations the filter cannot see, and has
       been the kernel's most exploited surface; programs fall back to read(2). */
    SYS_io_uring_setup, SYS_acct, SYS_swapon, SYS_swapoff, SYS_reboot, SYS_syslog,
    SYS_settimeofday, SYS_clock_settime, SYS_adjtimex, SYS_clock_adjtime,
#ifdef SYS_open_tree_attr
    SYS_open_tree_attr,
#endif
};

/* Every CLONE_NEW* flag; CLONE_NEWTIME (0x80) is the exit-signal byte in clone. */
#define NEW_NAMESPACES 0x7e020000u
#define CLONE_NEWTIME_FLAG 0x80u
#define MAX_FILTER 160
#define ARG0_LO offsetof(struct seccomp_data, args[0])
#define ARG0_HI (offsetof(struct seccomp_data, args[0]) + 4)
#define RET_ERRNO(e) (SECCOMP_RET_ERRNO | ((e) & SECCOMP_RET_DATA))

struct filter {
    struct sock_filter code[MAX_FILTER];
    unsigned short n;
};

static void emit(struct filter *f, unsigned short code, unsigned int k,
                 unsigned char jt, unsigned char jf)
{
    if (f->n >= MAX_FILTER)
        fail("seccomp", "filter too long", E2BIG);
    f->code[f->n++] = (struct sock_filter){code, jt, jf, k};
}

static void ret(struct filter *f, unsigned int value)
{
    emit(f, BPF_RET | BPF_K, value, 0, 0);
}

static void load(struct filter *f, unsigned int offset)
{
    emit(f, BPF_LD | BPF_W | BPF_ABS, offset, 0, 0);
}

/* Refuse syscall nr with EPERM when its first argument has any of flags. */
static void deny_flags(struct filter *f, int nr, unsigned int flags)
{
    emit(f, BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 4);
    load(f, ARG0_LO);
    emit(f, BPF_JMP | BPF_JSET | BPF_K, flags, 0, 1);
    ret(f, RET_ERRNO(EPERM));
    ret(f, SECCOMP_RET_ALLOW);
}

/* Refuse PTRACE_ATTACH and PTRACE_SEIZE, the only requests that start tracing
   another process; a child that asked with PTRACE_TRACEME may be traced
   (gdb, strace of a command they start). */
static void deny_ptrace(struct filter *f)
{
    emit(f, BPF_JMP | BPF_JEQ | BPF_K, SYS_ptrace, 0, 5);
    load(f, ARG0_LO);
    emit(f, BPF_JMP | BPF_JEQ | BPF_K, 16 /* PTRACE_ATTACH */, 1, 0);
    emit(f, BPF_JMP | BPF_JEQ | BPF_K, 0x4206 /* PTRACE_SEIZE */, 0, 1);
    ret(f, RET_ERRNO(EPERM));
    ret(f, SECCOMP_RET_ALLOW);
}

static void install_filter(void)
{
    struct filter f = {.n = 0};
    load(&f, offsetof(struct seccomp_data, arch));
    emit(&f, BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0);
    ret(&f, SECCOMP_RET_KILL_PROCESS);
    load(&f, offsetof(struct seccomp_data, nr));
#ifdef __x86_64__
    /* The x32 ABI reaches the same syscalls under other numbers. */
    emit(&f, BPF_JMP | BPF_JSET | BPF_K, 0x40000000u, 0, 1);
    ret(&f, SECCOMP_RET_KILL_PROCESS);
#endif
    for (size_t i = 0; i < sizeof DENIED / sizeof *DENIED; i++) {
        emit(&f, BPF_JMP | BPF_JEQ | BPF_K, DENIED[i], 0, 1);
        ret(&f, RET_ERRNO(EPERM));
    }
    /* clone3's flags sit in memory the filter cannot read: ENOSYS makes libc
       fall back to clone, whose flags it can. */
    emit(&f, BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1);
    ret(&f, RET_ERRNO(ENOSYS));
    deny_flags(&f, SYS_clone, NEW_NAMESPACES);
    deny_flags(&f, SYS_unshare, NEW_NAMESPACES | CLONE_NEWTIME_FLAG);
    deny_ptrace(&f);
    ret(&f, SECCOMP_RET_ALLOW);
    struct sock_fprog prog = {.len = f.n, .filter = f.code};
    check(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0), "seccomp", NULL);
}

static const char *take(int *i, int argc, char **argv)
{
    if (*i + 1 >= argc)
        fail("spec", argv[*i], 0);
    return argv[++*i];
}

static void add(struct list *list, const char *item)
{
    if (list->n >= MAX_ITEMS)
        fail("spec", "too many items", E2BIG);
    list->item[list->n++] = item;
}

static void add_layer(struct spec *s, struct layer *layers, int *n, int *i, int argc,
                      char **argv)
{
    if (*n >= MAX_ITEMS)
        fail("spec", "too many layers", E2BIG);
    struct layer *l = &layers[(*n)++];
    *l = s->next;
    s->next = (struct layer){.view = NULL};
    l->target = take(i, argc, argv);
    l->lower = take(i, argc, argv);
    l->upper = take(i, argc, argv);
    l->work = take(i, argc, argv);
}

static void add_limit(struct spec *s, int *i, int argc, char **argv)
{
    const char *name = take(i, argc, argv), *value = take(i, argc, argv);
    char *end;
    unsigned long long n = strtoull(value, &end, 10);
    if (*value == '\0' || *end != '\0')
        fail("spec", value, 0);
    for (int k = 0; k < 5; k++)
        if (strcmp(name, LIMIT_NAME[k]) == 0) {
            s->limit[k].rlim_cur = s->limit[k].rlim_max = n;
            return;
        }
    fail("spec", name, 0);
}

/* Return an owner's id (root's 0 included: it is mapped, never run as). */
static long parse_id(const char *text)
{
    char *end;
    long id = strtol(text, &end, 10);
    if (*text == '\0' || *end != '\0' || id < 0 || id > 0xfffffffeL)
        fail("spec id", text, 0);
    return id;
}

static long parse_uid(const char *text)
{
    char *end;
    long uid = strtol(text, &end, 10);
    /* Never root: a command runs as an unprivileged uid or not at all. */
    if (*text == '\0' || *end != '\0' || uid <= 0)
        fail("spec uid", text, 0);
    return uid;
}

static void parse_option(struct spec *s, int *i, int argc, char **argv)
{
    const char *opt = argv[*i];
    char c = opt[0] == '-' && opt[1] && !opt[2] ? opt[1] : '?';
    switch (c) {
    case 'r': s->root = take(i, argc, argv); break;
    case 't': s->tmp = take(i, argc, argv); break;
    case 'c': s->cwd = take(i, argc, argv); break;
    case 'u': s->uid = parse_uid(take(i, argc, argv)); break;
    case 'n': s->uid = -1; break;
    case 's': add(&s->system, take(i, argc, argv)); break;
    case 'm': add(&s->masks, take(i, argc, argv)); break;
    case 'e': add(&s->env, take(i, argc, argv)); break;
    case 'a':
        add(&s->aliases, take(i, argc, argv));
        add(&s->aliases, take(i, argc, argv));
        break;
    case 'L': add_layer(s, s->shared, &s->n_shared, i, argc, argv); break;
    case 'O': add_layer(s, s->own, &s->n_own, i, argc, argv); break;
    case 'g':
        s->next.owner_uid = parse_id(take(i, argc, argv));
        s->next.owner_gid = parse_id(take(i, argc, argv));
        s->next.view = take(i, argc, argv);
        break;
    case 'l': add_limit(s, i, argc, argv); break;
    default: fail("spec", opt, 0);
    }
}

static void parse(struct spec *s, int argc, char **argv)
{
    int i = 1;
    for (; i < argc && strcmp(argv[i], "--") != 0; i++)
        parse_option(s, &i, argc, argv);
    if (i + 1 >= argc || !s->root || !s->tmp || !s->cwd || s->uid == -2)
        fail("spec", "incomplete", 0);
    if (s->next.view)
        fail("spec", "-g without a layer after it", 0);
    for (int k = 0; k < s->n_shared + s->n_own; k++) {
        const struct layer *l = k < s->n_shared ? &s->shared[k]
                                                : &s->own[k - s->n_shared];
        /* A nested user namespace cannot map another owner. */
        if (l->view && s->uid < 0)
            fail("spec", "-g needs -u", 0);
    }
    s->argv = &argv[i + 1];
}

int main(int argc, char **argv)
{
    static struct spec s = {.uid = -2};
    parse(&s, argc, argv);
    /* Only unshare's fresh namespaces make it pid 1: never mount on the host's. */
    if (getpid() != 1)
        fail("start", "outside a new PID and mount namespace", EPERM);
    add(&s.env, NULL);
    build(&s);
    set_limits(&s);
    drop_privileges(s.uid);
    check(chdir(s.cwd), "chdir", s.cwd);
    install_filter();
    execve(s.argv[0], s.argv, (char *const *)s.env.item);
    fail("execve", s.argv[0], errno);
}
