package sandbox

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// checkJWT verifies the App JWT the way GitHub does: RS256 over
// header.payload with the App's key, iss the App id, exp in the future and at
// most 10 minutes ahead, iat not in the future.
func (s *GitHub) checkJWT(r *http.Request) error {
	s.mu.Lock()
	refused := s.refuseApp
	s.mu.Unlock()
	if refused {
		return errors.New("the App's key is refused")
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return errors.New("no bearer token")
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return errors.New("not a JWT")
	}
	var header struct {
		Alg string `json:"alg"`
	}
	var claims struct {
		Iss any   `json:"iss"`
		Iat int64 `json:"iat"`
		Exp int64 `json:"exp"`
	}
	if err := decodeSegment(parts[0], &header); err != nil {
		return err
	}
	if header.Alg != "RS256" {
		return errors.New("alg is not RS256")
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(&s.key.PublicKey, crypto.SHA256, sum[:], sig); err != nil {
		return err
	}
	if err := decodeSegment(parts[1], &claims); err != nil {
		return err
	}
	var iss string
	switch v := claims.Iss.(type) {
	case string:
		iss = v
	case float64:
		iss = strconv.FormatInt(int64(v), 10)
	}
	if iss != strconv.FormatInt(s.appID, 10) {
		return errors.New("iss is not the App id")
	}
	now := time.Now().Unix()
	if claims.Exp <= now || claims.Exp > now+11*60 || claims.Iat > now+60 {
		return errors.New("expired or not yet valid")
	}
	return nil
}

func decodeSegment(seg string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// signJWT signs claims RS256 with the App's key: a stateless installation
// token's JWT, base64url parts holding "-" and "_" joined by ".".
func (s *GitHub) signJWT(claims map[string]any) string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	unsigned := enc(map[string]string{"alg": "RS256", "typ": "JWT"}) + "." + enc(claims)
	sum := sha256.Sum256([]byte(unsigned))
	sig, _ := rsa.SignPKCS1v15(nil, s.key, crypto.SHA256, sum[:])
	return unsigned + "." + base64.RawURLEncoding.EncodeToString(sig)
}
