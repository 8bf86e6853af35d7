package main

// The pods' bridge, deleted by clean-host as `ip link delete` does: the
// host's network interface that nothing of the release uses any more.

import (
	"encoding/binary"
	"fmt"
	"net"
	"slices"
	"syscall"

	"golang.org/x/sys/unix"
)

// deleteLink deletes the network interface name of the process's network
// namespace (the host's, for a pod on the host's network) over rtnetlink,
// and says whether there was one.
func deleteLink(name string) (bool, error) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return false, fmt.Errorf("listing network interfaces: %w", err)
	}
	i := slices.IndexFunc(ifaces, func(iface net.Interface) bool { return iface.Name == name })
	if i < 0 {
		return false, nil
	}
	iface := ifaces[i]
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return false, fmt.Errorf("opening rtnetlink: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Sendto(fd, delLinkRequest(iface.Index), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return false, fmt.Errorf("deleting network interface %s: %w", name, err)
	}
	buf := make([]byte, unix.Getpagesize())
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return false, fmt.Errorf("deleting network interface %s: %w", name, err)
	}
	if err := ackError(buf[:n]); err != nil {
		return false, fmt.Errorf("deleting network interface %s: %w", name, err)
	}
	return true, nil
}

// delLinkRequest is an RTM_DELLINK request for the interface of index,
// asking for an acknowledgement. Pure.
func delLinkRequest(index int) []byte {
	length := unix.NLMSG_HDRLEN + unix.SizeofIfInfomsg
	b := make([]byte, length)
	binary.NativeEndian.PutUint32(b[0:4], uint32(length))
	binary.NativeEndian.PutUint16(b[4:6], unix.RTM_DELLINK)
	binary.NativeEndian.PutUint16(b[6:8], unix.NLM_F_REQUEST|unix.NLM_F_ACK)
	binary.NativeEndian.PutUint32(b[8:12], 1) // sequence
	// ifinfomsg: family, pad, type, index, flags, change.
	b[unix.NLMSG_HDRLEN] = unix.AF_UNSPEC
	binary.NativeEndian.PutUint32(b[unix.NLMSG_HDRLEN+4:unix.NLMSG_HDRLEN+8], uint32(int32(index)))
	return b
}

// ackError reads the kernel's answer: an NLMSG_ERROR message whose error
// is 0 for success, minus an errno otherwise. Pure.
func ackError(msg []byte) error {
	if len(msg) < unix.NLMSG_HDRLEN+4 {
		return fmt.Errorf("a netlink answer of %d bytes", len(msg))
	}
	if typ := binary.NativeEndian.Uint16(msg[4:6]); typ != unix.NLMSG_ERROR {
		return fmt.Errorf("a netlink answer of type %d, not an acknowledgement", typ)
	}
	if code := int32(binary.NativeEndian.Uint32(msg[unix.NLMSG_HDRLEN : unix.NLMSG_HDRLEN+4])); code != 0 {
		return syscall.Errno(-code)
	}
	return nil
}
