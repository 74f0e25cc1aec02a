package config

import (
	"errors"
	"net"
	"syscall"
)

// Listen opens the TCP listener of the address variable name holds. An
// address that cannot be listened on is a configuration error naming name
// (exit 2, one line), before anything slow starts.
func Listen(name, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		return ln, nil
	}
	reason := err.Error()
	var op *net.OpError
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		reason = "is in use by another process"
	case errors.Is(err, syscall.EACCES):
		reason = "needs privileges this process lacks (use a port above 1023)"
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		reason = "is not an address of this host"
	case errors.As(err, &op):
		reason = "cannot be listened on: " + op.Err.Error()
	}
	return nil, &Error{name, addr + " " + reason}
}
