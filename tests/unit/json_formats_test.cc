// constraint/json_formats: each format's regex over JSON string contents. date, ipv4,
// ipv6 and uuid are checked against python3-jsonschema's FormatChecker on generated
// candidates (tests/golden/regex/format_cases.json, from make_regex_cases.py); the
// formats it does not check without extra packages (date-time, time, duration, email,
// hostname, uri) against hand-written cases, mostly from the JSON-Schema-Test-Suite.
#include "constraint/json_formats.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "constraint/regex_parser.h"

namespace llmserve::constraint {
namespace {

// The inside of a JSON string literal for s: as a serializer writes it, and with `/` as \/.
std::string JsonMinimal(const std::string& s) {
  std::string quoted = nlohmann::json(s).dump();
  return quoted.substr(1, quoted.size() - 2);
}
std::string JsonSlashEscaped(const std::string& s) {
  std::string out;
  for (char c : JsonMinimal(s)) {
    if (c == '/') out += '\\';
    out += c;
  }
  return out;
}

void ExpectFormat(const std::string& format, const std::vector<std::string>& valid,
                  const std::vector<std::string>& invalid) {
  RegexPool pool;
  absl::StatusOr<RegexId> re = JsonFormatRegex(format, pool);
  ASSERT_TRUE(re.ok()) << format << ": " << re.status();
  for (const std::string& s : valid) {
    EXPECT_TRUE(RegexFullMatch(pool, *re, JsonMinimal(s))) << format << ": " << s;
    EXPECT_TRUE(RegexFullMatch(pool, *re, JsonSlashEscaped(s))) << format << ": " << s << " with \\/";
  }
  for (const std::string& s : invalid) {
    EXPECT_FALSE(RegexFullMatch(pool, *re, JsonMinimal(s))) << format << ": " << s;
  }
}

TEST(JsonFormats, PythonFormatCheckerCases) {
  std::ifstream in(std::string(LLMSERVE_SOURCE_DIR) + "/tests/golden/regex/format_cases.json");
  ASSERT_TRUE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json all = nlohmann::json::parse(ss.str());
  std::vector<std::string> formats;
  for (const auto& c : all) {
    formats.push_back(c["format"]);
    std::vector<std::string> valid = c["valid"], invalid = c["invalid"];
    EXPECT_GT(valid.size(), 10u) << formats.back();
    EXPECT_GT(invalid.size(), 10u) << formats.back();
    ExpectFormat(c["format"], valid, invalid);
  }
  EXPECT_EQ(formats, (std::vector<std::string>{"date", "ipv4", "ipv6", "uuid"}));
}

TEST(JsonFormats, DateTime) {
  ExpectFormat(
      "date-time",
      {"1963-06-19T08:30:06.283185Z", "1963-06-19T08:30:06Z", "1937-01-01T12:00:27.87+00:20",
       "1990-12-31T15:59:50.123-08:00", "1998-12-31T23:59:60Z", "1998-12-31T15:59:60.123-08:00",
       "1963-06-19t08:30:06.283185z", "2020-02-29T00:00:00Z", "2000-02-29T00:00:00Z", "0000-02-29T00:00:00Z"},
      {"1990-02-31T15:59:59.123-08:00", "1990-12-31T15:59:59-24:00", "1963-06-19T08:30:06.28123+01:00Z",
       "06/19/1963 08:30:06 PST", "2013-350T01:01:01", "1963-6-19T08:30:06.283185Z",
       "1963-06-1T08:30:06.283185Z", "1963-06-1\u09eaT00:00:00Z", "1963-06-11T0\u09ea:00:00Z",
       "2021-02-29T00:00:00Z", "1900-02-29T00:00:00Z", "1963-06-19T08:30:06", "1963-06-19 08:30:06Z",
       "1963-06-19T08:30:06.Z", "1963-06-19T24:00:00Z", "1963-06-19T08:30:06+01", ""});
}

TEST(JsonFormats, Date) {
  // Beyond Python's checker (format_cases.json): RFC 3339 allows year 0000 (a leap year).
  ExpectFormat("date", {"0000-01-01", "0000-02-29", "2400-02-29", "1963-06-19"},
               {"2100-02-29", "1963-06-19T00:00:00Z", "1963-13-01", "1963-00-10", "1963-04-31"});
}

TEST(JsonFormats, Time) {
  ExpectFormat("time",
               {"08:30:06Z", "23:59:60Z", "08:30:06.283185Z", "08:30:06+00:20", "08:30:06-08:00", "08:30:06z",
                "00:00:00+23:59", "12:00:00.5-00:00"},
               {"008:030:006Z", "8:3:6Z", "8:0030:6Z", "08:30:06", "24:00:00Z", "00:60:00Z", "00:00:61Z",
                "01:02:03+24:00", "01:02:03+00:60", "01:02:03Z+00:30", "08:30:06 PST", "01:01:01,1111",
                "12:00:00.Z", "1\u09e8:00:00Z", ""});
}

TEST(JsonFormats, Duration) {
  ExpectFormat("duration",
               {"P4DT12H30M5S", "P4Y", "PT0S", "P0D", "P1M", "PT1M", "PT36H", "P1D", "P2W", "P1Y2M3DT4H5M6S",
                "PT1H2M", "P1Y2M", "P1MT1S"},
               {"4DT12H30M5S", "P", "PT", "P1YT", "PT1D", "P2D1Y", "P1D2H", "P2S", "P1Y2W", "P2W1D",
                "P\u09eaY", "P1", "P1H", "P1MT", "PT1.5S", "p1d", ""});
}

TEST(JsonFormats, Email) {
  ExpectFormat("email",
               {"joe.bloggs@example.com", "te~st@example.com", "~test@example.com", "test~@example.com",
                "te.s.t@example.com", "a@b", "user+tag@sub.example.co.uk", "x@localhost", "o'hara@x.org",
                "a/b@x.org", "{x}|y@x-y.org"},
               {"2962", ".test@example.com", "test.@example.com", "te..st@example.com",
                "joe bloggs@example.com", "@example.com", "a@", "a@@b.com", "a@-b.com", "a@b-.com",
                "\"joe bloggs\"@example.com", "a@b..com", "a@.b.com", "a\\b@x.org", ""});
}

TEST(JsonFormats, Hostname) {
  const std::string label63(63, 'a'), label64(64, 'a');
  ExpectFormat("hostname",
               {"www.example.com", "xn--4gbwdl.xn--wgbh1c", "a", "hostname", "host-name", "h0stn4me", "1host",
                "hostnam3", label63, label63 + "." + label63, "a.b.c.d", "A-B.C"},
               {"-a-host-name-that-starts-with--", "not_a_valid_host_name", label64, "-hostname", "hostname-",
                "_hostname", "host.-name", ".", "", "a..b", "www.example.com.", "host name", "h\u00e9.com"});
}

TEST(JsonFormats, Ipv4AndIpv6Extras) {
  ExpectFormat("ipv4", {"0.0.0.0", "255.255.255.255", "192.168.0.1"},
               {"256.0.0.0", "01.2.3.4", "1.2.3", "1.2.3.4.5", "1.2.3.\u09e8", " 1.2.3.4", "0x7f000001"});
  ExpectFormat(
      "ipv6", {"::", "::1", "fe80::1", "::ffff:192.168.0.1", "1:2:3:4:5:6:7:8", "FFFF::ffff"},
      {"fe80::1%eth0", "12345::", ":::", "1:2:3:4:5:6:7:8:9", "::ffff:01.2.3.4", "1::2::3", "\u09ea::"});
}

TEST(JsonFormats, Uuid) {
  ExpectFormat("uuid",
               {"2EB8AA08-AA98-11EA-B4AA-73B441D16380", "2eb8aa08-aa98-11ea-b4aa-73b441d16380",
                "00000000-0000-0000-0000-000000000000"},
               {"2eb8aa08aa9811eab4aa73b441d16380", "2eb8aa08-aa98-11ea-b4aa-73b441d1638",
                "{2eb8aa08-aa98-11ea-b4aa-73b441d16380}", "2eb8aa08-aa98-11ea-b4aa-73b441d1638g"});
}

TEST(JsonFormats, Uri) {
  ExpectFormat(
      "uri",
      {"http://foo.bar/?baz=qux#quux", "http://foo.com/blah_(wikipedia)_blah#cite-1",
       "http://foo.bar/?q=Test%20URL-encoded%20stuff", "http://xn--nw2a.xn--j6w193g/",
       "http://-.~_!$&'()*+,;=:%40:80%2f::::::@example.com", "http://223.255.255.254",
       "ftp://ftp.is.co.za/rfc/rfc1808.txt", "ldap://[2001:db8::7]/c=GB?objectClass?one",
       "mailto:John.Doe@example.com", "news:comp.infosystems.www.servers.unix", "tel:+1-816-555-1212",
       "telnet://192.0.2.16:80/", "urn:oasis:names:specification:docbook:dtd:xml:4.1.2", "a:", "A+b-c.d:x"},
      {"//foo.bar/?baz=qux#quux", "/abc", "\\\\WINDOWS\\fileshare", "abc", "http:// shouldfail.com",
       ":// should fail", "bar,baz:foo", "1http://x", "http://x y", "http://%zz", "http://\u00e9.com",
       "http://x\"y", "http://x\ny", ""});
}

TEST(JsonFormats, UnknownFormatsAndPatterns) {
  RegexPool pool;
  absl::StatusOr<RegexId> re = JsonFormatRegex("iri", pool);
  EXPECT_EQ(re.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(re.status().message(), "format \"iri\" is not supported");
  EXPECT_EQ(JsonFormatPattern("uri-reference"), "");
  for (const char* f :
       {"date-time", "date", "time", "duration", "email", "hostname", "ipv4", "ipv6", "uuid", "uri"}) {
    EXPECT_FALSE(JsonFormatPattern(f).empty()) << f;
    // Each also compiles for UTF-8 text (the patterns use no JSON-specific syntax).
    EXPECT_TRUE(CompileRegex(JsonFormatPattern(f), {}, RegexEncoding::kUtf8, pool).ok()) << f;
  }
  EXPECT_TRUE(pool.status().ok());
}

}  // namespace
}  // namespace llmserve::constraint
