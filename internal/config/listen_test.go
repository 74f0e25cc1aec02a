package config

import (
	"errors"
	"net"
	"strings"
	"testing"
)

func TestListenNamesTheVariableOfAPortInUse(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	_, err = Listen("QUEEN_API_LISTEN", addr)
	var bad *Error
	if !errors.As(err, &bad) || err.Error() != "QUEEN_API_LISTEN: "+addr+" is in use by another process" {
		t.Fatalf("got %v", err)
	}
	ln, err := Listen("QUEEN_LISTEN", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	if _, err := Listen("QUEEN_LISTEN", "192.0.2.1:0"); err == nil || !strings.HasPrefix(err.Error(), "QUEEN_LISTEN: 192.0.2.1:0 ") {
		t.Errorf("an address of another host: %v", err)
	}
}
