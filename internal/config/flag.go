package config

import (
	"errors"
	"strings"
)

// ErrFlag is a value that is not a flag.
var ErrFlag = errors.New("must be on/off, true/false or 1/0")

// ParseFlag reads an on/off value: on/off, true/false, 1/0 in any case;
// "" is off.
func ParseFlag(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "off", "false", "0":
		return false, nil
	case "on", "true", "1":
		return true, nil
	}
	return false, ErrFlag
}
