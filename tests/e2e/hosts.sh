#!/usr/bin/env bash
# Several hosts, one database: three daemons, each in its own UTS and
# network namespace with its own host name, write one database at once.
# DB/hosts pools hostA and hostB into platform "pool"; hostC writes its own
# directory.  An epoch started on hostA is adopted by the others at their
# next merge; each host's files stay its own; -host all sums them and a
# pooled host can still be asked for alone.
. "$DCPI_ROOT/tests/tap.sh"

if [ "$(id -u)" -ne 0 ]; then
	skip "dcpid samples system-wide and unshare needs root (CI runs as root)"
	done_testing
fi
if ! unshare -u -n true 2>/dev/null; then
	skip "unshare -u -n does not work here: no UTS or network namespaces"
	done_testing
fi

# on HOST CMD...: CMD in a new UTS and network namespace named HOST
on() {
	local h=$1; shift
	unshare -u -n sh -c 'hostname "$0" && exec "$@"' "$h" "$@"
}

# run_hosts DB WHERE: the whole run on database DB (WHERE names it in the
# results); the daemons are stopped at its end
run_hosts() {
	local DB=$1 W=$2 h e1 e2 st adopted b c i na nb nc nall
	mkdir -p "$DB" && chmod 700 "$DB"
	printf '# host platform\nhostA pool\nhostB pool   # same machines\n' >"$DB/hosts"

	for h in hostA hostB hostC; do
		on $h "$DCPI_BIN/dcpid" -db "$DB" -merge 1 -event cpu-clock 2>/dev/null ||
			{ fail "$W: $W: dcpid starts as $h"; return; }
		at_exit "unshare -u -n sh -c 'hostname $h && exec \"$DCPI_BIN/dcpictl\" -db \"$DB\" -timeout 10 quit' >/dev/null 2>&1"
	done
	st=$(on hostB "$DCPI_BIN/dcpictl" -db "$DB" status 2>&1)
	grep -q '^platform: pool$' <<<"$st" && grep -q '^host: hostB$' <<<"$st" &&
		pass "$W: hostB writes as platform pool (DB/hosts)" || fail "$W: hostB writes as platform pool" "$st"
	e1=$(sed -n 's/^epoch: //p' <<<"$st")

	# a new epoch on hostA: hostB and hostC adopt it within a merge or two
	sleep 1.1
	on hostA "$DCPI_BIN/dcpictl" -db "$DB" epoch >/dev/null || fail "$W: dcpictl epoch on hostA"
	e2=$(on hostA "$DCPI_BIN/dcpictl" -db "$DB" status | sed -n 's/^epoch: //p')
	adopted=
	for i in $(seq 50); do
		b=$(on hostB "$DCPI_BIN/dcpictl" -db "$DB" status | sed -n 's/^epoch: //p')
		c=$(on hostC "$DCPI_BIN/dcpictl" -db "$DB" status | sed -n 's/^epoch: //p')
		[ "$b" = "$e2" ] && [ "$c" = "$e2" ] && adopted=1 && break
		sleep 0.2
	done
	[ -n "$adopted" ] && [ "$e2" \> "$e1" ] &&
		pass "$W: hostB and hostC adopt the epoch hostA started ($e1 -> $e2)" ||
		fail "$W: hostB and hostC adopt hostA's epoch" "A $e2, B $b, C $c (was $e1)"
	grep -q "epoch $e2 was started by another host: adopting it" "$DB/dcpid-hostC.log" &&
		pass "$W: hostC's log says it adopted the epoch" ||
		fail "$W: hostC's log says it adopted the epoch" "$(tail -5 "$DB/dcpid-hostC.log")"

	"$T/spin" 400
	for h in hostA hostB hostC; do
		on $h "$DCPI_BIN/dcpictl" -db "$DB" flush >/dev/null || fail "$W: flush $h"
	done

	# each host its own files: pool/ has hostA's and hostB's, hostC/ its own
	ls "$DB/$e2" >"$T/dirs"
	[ "$(cat "$T/dirs" | tr '\n' ' ')" = "hostC pool " ] && pass "$W: platform directories: hostC and pool" ||
		fail "$W: platform directories: hostC and pool" "$(cat "$T/dirs")"
	na=$(ls "$DB/$e2/pool" | grep -c '@hostA\.prof$')
	nb=$(ls "$DB/$e2/pool" | grep -c '@hostB\.prof$')
	[ -f "$DB/$e2/pool/epoch@hostA.stats" ] && [ -f "$DB/$e2/pool/epoch@hostB.stats" ] &&
		[ -f "$DB/$e2/hostC/epoch.stats" ] && [ "$na" -ge 1 ] && [ "$nb" -ge 1 ] &&
		[ -z "$(ls "$DB/$e2/pool" | grep '\.prof$' | grep -v '@host[AB]\.prof$' | grep -v '^unknown@host[AB]')" ] &&
		pass "$W: pooled files are named per host ($na of hostA, $nb of hostB), stats per host" ||
		fail "$W: pooled files are named per host" "$(ls "$DB/$e2/pool")"

	# spin ran once, and every host sampled it: all three see it; -host all sums
	n_of() { "$DCPI_BIN/dcpiprof" -db "$DB" -epoch "$e2" -csv "$@" 2>/dev/null | grep "^$T/spin," | cut -d, -f3; }
	na=$(n_of -host hostA) nb=$(n_of -host hostB) nc=$(n_of -host hostC) nall=$(n_of -host all)
	echo "# $W: spin: hostA $na, hostB $nb, hostC $nc, all $nall"
	[ -n "$na" ] && [ -n "$nb" ] && [ -n "$nc" ] && [ "$nall" = $((na + nb + nc)) ] &&
		[ "$na" -ge 400 ] && [ "$nb" -ge 400 ] && [ "$nc" -ge 400 ] &&
		pass "$W: -host all sums the three hosts; a pooled host alone is its own ($na + $nb + $nc)" ||
		fail "$W: -host all sums the three hosts" "A $na B $nb C $nc all $nall"
	h=$("$DCPI_BIN/dcpiprof" -db "$DB" -epoch "$e2" -host all -json | grep -o '"hosts": \[[^]]*\]')
	[ "$h" = '"hosts": ["hostC", "pool"]' ] && pass "$W: the report names the platform directories: $h" ||
		fail "$W: the report names the platform directories" "$h"
	for h in hostA hostB hostC; do
		on $h "$DCPI_BIN/dcpictl" -db "$DB" -timeout 10 quit >/dev/null 2>&1
	done
}

DB=$T/db
build_workload spin || { fail "build spin"; done_testing; }
run_hosts "$DB" local

# the same on a network file system: sshfs (FUSE) to an ssh server on the
# loopback, the three daemons writing one directory through it
sshfs_run() {
	local port key=$T/id share=$T/share mnt=$T/mnt
	command -v sshfs >/dev/null && [ -x /usr/sbin/sshd ] && [ -e /dev/fuse ] ||
		{ skip "no sshfs or sshd (scripts/install-deps installs sshfs and openssh-server): the shared file system run is not done"; return; }
	mkdir -p "$share" "$mnt" /run/sshd
	ssh-keygen -q -t ed25519 -N '' -f "$T/hostkey" && ssh-keygen -q -t ed25519 -N '' -f "$key" ||
		{ fail "ssh keys"; return; }
	cp "$key.pub" "$T/authorized_keys"
	port=$((20000 + $$ % 20000))
	cat >"$T/sshd_config" <<EOC
Port $port
ListenAddress 127.0.0.1
HostKey $T/hostkey
AuthorizedKeysFile $T/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM yes
StrictModes no
PidFile $T/sshd.pid
Subsystem sftp internal-sftp
EOC
	/usr/sbin/sshd -f "$T/sshd_config" -E "$T/sshd.log" || { fail "sshd starts" "$(cat "$T/sshd.log")"; return; }
	at_exit "kill \$(cat '$T/sshd.pid') 2>/dev/null"
	sshfs "root@127.0.0.1:$share" "$mnt" -p "$port" -o IdentityFile="$key" \
		-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o dir_cache=no \
		2>"$T/sshfs.err" || { fail "sshfs mounts" "$(cat "$T/sshfs.err")"; return; }
	at_exit "fusermount -u '$mnt' 2>/dev/null || umount -l '$mnt'"
	mkdir -p "$mnt/db" && chmod 700 "$mnt/db"
	printf '# host platform\nhostA pool\nhostB pool\n' >"$mnt/db/hosts"
	run_hosts "$mnt/db" sshfs
	# nothing torn: every profile written through sshfs reads whole
	local bad=0 n=0 f
	for f in "$share"/db/2*/*/*.prof; do
		n=$((n + 1))
		"$DCPI_BIN/dcpicat" -header "$f" >/dev/null 2>&1 || bad=$((bad + 1))
	done
	[ $n -gt 0 ] && [ $bad -eq 0 ] && [ -z "$(ls "$share"/db/2*/*/ | grep '\.tmp\.')" ] &&
		pass "sshfs: all $n profiles read whole, no temporary file left" ||
		fail "sshfs: nothing torn" "$bad of $n unreadable; $(ls "$share"/db/2*/*/ | grep '\.tmp\.' | head -3)"
}
sshfs_run

# a malformed hosts file: the daemon refuses to start, naming the line
for h in hostA hostB hostC; do
	on $h "$DCPI_BIN/dcpictl" -db "$DB" -timeout 10 quit >/dev/null 2>&1
done
printf 'hostA pool\nhostB\n' >"$DB/hosts"
out=$(on hostB "$DCPI_BIN/dcpid" -db "$DB" -nodaemon -log - 2>&1); rc=$?
[ $rc -ne 0 ] && grep -q "hosts:2: want 'HOST PLATFORM'" <<<"$out" &&
	pass "a malformed hosts file is refused, naming its line" ||
	fail "a malformed hosts file is refused" "rc $rc: $out"
done_testing
