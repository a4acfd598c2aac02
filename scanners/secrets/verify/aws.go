package verify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/mlwarden/mlwarden/scanners"
)

// The secrets check's AWS rules: an access key id, and a secret access key
// (next to an "aws … secret" name). A call needs both.
const (
	RuleAWSKeyID  = "secrets/aws-access-key-id"
	RuleAWSSecret = "secrets/aws-secret-access-key"
	awsRulePrefix = "secrets/aws-"
)

// awsPair is one key id with the secret it is verified with, and the
// findings (of both) that the answer is for.
type awsPair struct {
	cred     Credential
	findings []int
}

// awsPairs pairs each AWS access key id with the secret access key found
// nearest to it (by line) in the same artifact — the same target, path,
// layer and commit: a key id and a secret from different files are never
// tried together. A key id with no secret beside it, or a secret with no
// key id, is a pair with the other half empty (unknown, not asked).
func awsPairs(fs []scanners.Finding) []awsPair {
	type place struct{ target, path, layer, commit string }
	ids, secrets := map[place][]int{}, map[place][]int{}
	var order []place
	for i := range fs {
		f := &fs[i]
		if f.Secret == "" {
			continue
		}
		p := place{f.Target, f.Path, f.Layer, f.Commit}
		switch f.RuleID {
		case RuleAWSKeyID:
			if ids[p] == nil && secrets[p] == nil {
				order = append(order, p)
			}
			ids[p] = append(ids[p], i)
		case RuleAWSSecret:
			if ids[p] == nil && secrets[p] == nil {
				order = append(order, p)
			}
			secrets[p] = append(secrets[p], i)
		}
	}
	var out []awsPair
	for _, p := range order {
		used := map[int]bool{}
		for _, i := range ids[p] {
			best := -1
			for _, j := range secrets[p] {
				if best < 0 || abs(fs[j].Line-fs[i].Line) < abs(fs[best].Line-fs[i].Line) {
					best = j
				}
			}
			pr := awsPair{cred: Credential{KeyID: fs[i].Secret}, findings: []int{i}}
			if best >= 0 {
				pr.cred.Token = fs[best].Secret
				pr.findings = append(pr.findings, best)
				used[best] = true
			}
			out = append(out, pr)
		}
		for _, j := range secrets[p] {
			if !used[j] {
				out = append(out, awsPair{cred: Credential{Token: fs[j].Secret}, findings: []int{j}})
			}
		}
	}
	return out
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// awsSkip says why a pair is not asked about.
func awsSkip(c Credential) string {
	switch {
	case c.KeyID == "":
		return "no AWS access key id was found with this secret in the same file"
	case c.Token == "":
		return "no AWS secret access key was found with this key id in the same file"
	case strings.HasPrefix(c.KeyID, "ASIA"):
		return "a temporary AWS key (ASIA…) works only with its session token, which was not found"
	}
	return ""
}

const stsBody = "Action=GetCallerIdentity&Version=2011-06-15"

// checkAWS: STS GetCallerIdentity (POST / with
// Action=GetCallerIdentity&Version=2011-06-15, signed with Signature
// Version 4 for service sts in us-east-1, the global endpoint's region;
// https://docs.aws.amazon.com/STS/latest/APIReference/API_GetCallerIdentity.html):
// "No permissions are required to perform this operation", so any working
// key pair gets 200 with its Account, UserId and Arn. A key id that does
// not exist or is deactivated is 403 InvalidClientTokenId; a wrong secret
// 403 SignatureDoesNotMatch ("Common Errors",
// https://docs.aws.amazon.com/STS/latest/APIReference/CommonErrors.html).
// Signing is aws-sdk-go-v2's signer, already in the module graph.
func checkAWS(ctx context.Context, c *call, cred Credential) Answer {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/", strings.NewReader(stsBody))
	if err != nil {
		return unknownf("bad request")
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	req.Header.Set("User-Agent", "mlwarden-verify")
	if err := signV4(ctx, req, cred, stsBody, "sts", "us-east-1", time.Now()); err != nil {
		return unknownf("could not sign the request")
	}
	r, err := c.send(req)
	if err == nil && r.status == http.StatusForbidden {
		var e struct {
			Error struct{ Code string } `xml:"Error"`
		}
		_ = xml.Unmarshal(r.body, &e)
		switch e.Error.Code {
		case "InvalidClientTokenId", "SignatureDoesNotMatch":
			return Answer{Status: scanners.VerificationRevoked, Reason: e.Error.Code}
		}
		return unknownf("HTTP 403 %s", e.Error.Code)
	}
	a, done := common(r, err)
	if done {
		return a
	}
	var out struct {
		Result struct{ Arn string } `xml:"GetCallerIdentityResult"`
	}
	_ = xml.Unmarshal(r.body, &out)
	a.Identity = out.Result.Arn
	return a
}

// signV4 signs req (whose body is body) with the key pair.
func signV4(ctx context.Context, req *http.Request, cred Credential, body, service, region string, at time.Time) error {
	sum := sha256.Sum256([]byte(body))
	creds := aws.Credentials{AccessKeyID: cred.KeyID, SecretAccessKey: cred.Token}
	return v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), service, region, at)
}
