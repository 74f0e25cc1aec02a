package api

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// duplicateName is the place of the first name given twice in one object
// of data ("review_state", "candidates[0].issue"), or "" when none is.
// encoding/json keeps the last of them, so {"review_state": "accept",
// "review_state": "sendBack"} would be written as whichever came last,
// while a proxy or a person reading the body may take the first. data is
// one JSON value that decoded already (so its nesting is bounded).
func duplicateName(data []byte) string {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return firstDuplicate(dec, "")
}

func firstDuplicate(dec *json.Decoder, at string) string {
	tok, err := dec.Token()
	if err != nil {
		return ""
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			t, err := dec.Token()
			name, ok := t.(string)
			if err != nil || !ok {
				return ""
			}
			place := name
			if at != "" {
				place = at + "." + name
			}
			if seen[name] {
				return place
			}
			seen[name] = true
			if d := firstDuplicate(dec, place); d != "" {
				return d
			}
		}
		_, _ = dec.Token() // '}'
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if d := firstDuplicate(dec, at+"["+strconv.Itoa(i)+"]"); d != "" {
				return d
			}
		}
		_, _ = dec.Token() // ']'
	}
	return ""
}
