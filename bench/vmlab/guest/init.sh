#!/bin/bash
# vmlab stage 2 (bash): libraries, modules, network, then the command loop on
# /dev/ttyS1. Protocol (one command at a time):
#   host -> guest: "<id> <base64 of the command>\n"
#   guest -> host: "@@VMLAB-BEGIN <id>@@\n" <output> "\n@@VMLAB-END <id> <rc>@@\n"
# Commands run under bash with stdin from /dev/null and stdout+stderr
# captured in a file; background jobs (cmd &) keep running.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/vmlab/bin
export HOME=/root
mkdir -p /root /etc/ppp/peers /var/log

printf '%s\n' /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu >/etc/ld.so.conf
/sbin/ldconfig 2>/dev/null && unset LD_LIBRARY_PATH

: >/vmlab/modules.log
while read -r m; do
	[ -n "$m" ] || continue
	if insmod "/vmlab/modules/$m.ko" >>/vmlab/modules.log 2>&1; then
		echo "loaded $m" >>/vmlab/modules.log
	else
		echo "FAILED $m" >>/vmlab/modules.log
	fi
done </vmlab/modules.order

hostname vmlab
ip link set lo up
for i in /sys/class/net/*; do
	n=${i##*/}
	[ "$n" = lo ] && continue
	# No IPv6 on the lab NICs: the wire carries only what tests send
	# (PPP links still get IPv6 for IPv6CP).
	echo 1 >"/proc/sys/net/ipv6/conf/$n/disable_ipv6" 2>/dev/null
	ip link set "$n" up
done
syslogd -O /var/log/messages
echo "vmlab: ready" >/dev/console

tty=/dev/ttyS1
stty -F "$tty" raw -echo 115200
exec 3<>"$tty"
echo "@@VMLAB-READY@@" >&3
while IFS= read -r line <&3; do
	id=${line%% *}
	b64=${line#* }
	[[ $id =~ ^[0-9a-z]+$ ]] || continue
	cmd=$(printf '%s' "$b64" | base64 -d)
	out=/tmp/.vmlab-out.$id
	bash -c "$cmd" </dev/null >"$out" 2>&1 3>&-
	rc=$?
	printf '@@VMLAB-BEGIN %s@@\n' "$id" >&3
	cat "$out" >&3
	rm -f "$out"
	printf '\n@@VMLAB-END %s %d@@\n' "$id" "$rc" >&3
done
echo "vmlab: control channel closed" >/dev/console
poweroff -f
