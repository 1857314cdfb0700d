// Package peercred tells who is at the other end of a connected unix
// socket (SO_PEERCRED on Linux, LOCAL_PEERCRED on FreeBSD), for servers
// that admit only their own user. It imports only the standard library
// and x/sys/unix.
package peercred
