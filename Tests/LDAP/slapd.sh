#!/usr/bin/env bash
# A private OpenLDAP server for the fleet tests, entirely inside DIR (nothing under /etc/ldap,
# /var/lib/ldap or the system service is used or changed):
#
#   Tests/LDAP/slapd.sh start DIR PORT [PROVIDER_PORT]   make and start; prints nothing
#   Tests/LDAP/slapd.sh start DIR PORT peer:PORT2:ID     one of two multi-provider servers
#   Tests/LDAP/slapd.sh stop DIR                         stop (SIGTERM, then wait)
#
# DIR gets: a test CA and a server certificate for 127.0.0.1 (IP SAN) made by openssl, its own
# cn=config (slapadd -n0 -F) with core/cosine/nis/inetorgperson and ldap/puff.ldif, an mdb
# database for dc=puff,dc=test with two users (puff-it-fleet1/2) and two hosts
# (cn=host1/host2,ou=hosts with password "host1-secret"/"host2-secret"), and slapd listening on
# ldapi://DIR/ldapi, ldaps://127.0.0.1:PORT and ldap://127.0.0.1:PORT+1 (for StartTLS). Root on the ldapi socket (SASL EXTERNAL) manages
# everything; the hosts may write the puff* attributes of users.
#
# With peer:PORT2:ID the server is provider ID (1 or 2) of a multi-provider pair whose other
# server listens on PORT2: each replicates from the other (syncprov + syncrepl, olcServerID,
# olcMultiProvider); server 1 holds the initial entries, server 2 starts empty.
#
# With PROVIDER_PORT the server is a syncrepl consumer of the server on that port (read-only,
# olcUpdateRef to the provider) and starts with an empty database.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
schema=$here/../../ldap/puff.ldif
cmd=$1 dir=$2

stop() {
    if [ -s "$dir/slapd.pid" ]; then
        pid=$(cat "$dir/slapd.pid")
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
        rm -f "$dir/slapd.pid"
    fi
}

if [ "$cmd" = stop ]; then stop; exit 0; fi
port=$3 provider=${4:-} peer="" serverid=""
case "$provider" in
    peer:*) peer=${provider#peer:}; serverid=${peer#*:}; peer=${peer%%:*}; provider="" ;;
esac
mkdir -p "$dir/config" "$dir/db"
chmod 700 "$dir"

# Test CA and a server certificate whose subjectAltName is the address the clients use.
# A consumer is given the provider's CA (ca.pem, ca.key) before it starts.
if [ ! -s "$dir/ca.pem" ]; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=Puff test CA" \
        -keyout "$dir/ca.key" -out "$dir/ca.pem" 2>/dev/null
fi
if [ ! -s "$dir/server.pem" ]; then
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=127.0.0.1" \
        -keyout "$dir/server.key" -out "$dir/server.csr" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' > "$dir/server.ext"
    openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial \
        -days 2 -extfile "$dir/server.ext" -out "$dir/server.pem" 2>/dev/null
fi

adminpw=$(slappasswd -s admin-secret)
{
cat <<LDIF
dn: cn=config
objectClass: olcGlobal
cn: config
olcPidFile: $dir/slapd.pid
${serverid:+olcServerID: $serverid
}olcLogLevel: none
olcTLSCACertificateFile: $dir/ca.pem
olcTLSCertificateFile: $dir/server.pem
olcTLSCertificateKeyFile: $dir/server.key

dn: cn=module{0},cn=config
objectClass: olcModuleList
cn: module{0}
olcModulePath: /usr/lib/ldap
olcModuleLoad: back_mdb
olcModuleLoad: syncprov

dn: cn=schema,cn=config
objectClass: olcSchemaConfig
cn: schema

include: file:///etc/ldap/schema/core.ldif

include: file:///etc/ldap/schema/cosine.ldif

include: file:///etc/ldap/schema/nis.ldif

include: file:///etc/ldap/schema/inetorgperson.ldif

include: file://$schema

dn: olcDatabase={-1}frontend,cn=config
objectClass: olcDatabaseConfig
objectClass: olcFrontendConfig
olcDatabase: {-1}frontend

dn: olcDatabase={0}config,cn=config
objectClass: olcDatabaseConfig
olcDatabase: {0}config
olcAccess: {0}to * by dn.exact=gidNumber=0+uidNumber=0,cn=peercred,cn=external,cn=auth manage by * none

dn: olcDatabase={1}mdb,cn=config
objectClass: olcDatabaseConfig
objectClass: olcMdbConfig
olcDatabase: {1}mdb
olcDbDirectory: $dir/db
olcSuffix: dc=puff,dc=test
olcRootDN: cn=admin,dc=puff,dc=test
olcRootPW: $adminpw
olcDbIndex: objectClass eq
olcDbIndex: uid eq
olcDbIndex: entryCSN,entryUUID eq
olcAccess: {0}to attrs=userPassword by dn.exact=gidNumber=0+uidNumber=0,cn=peercred,cn=external,cn=auth manage by anonymous auth by * none
olcAccess: {1}to * by dn.exact=gidNumber=0+uidNumber=0,cn=peercred,cn=external,cn=auth manage by dn.exact=cn=admin,dc=puff,dc=test read by dn.children=ou=hosts,dc=puff,dc=test write by * none
LDIF
if [ -n "$peer" ]; then
cat <<LDIF
olcSyncrepl: {0}rid=00$serverid provider=ldaps://127.0.0.1:$peer bindmethod=simple binddn="cn=admin,dc=puff,dc=test" credentials=admin-secret searchbase="dc=puff,dc=test" type=refreshAndPersist retry="1 +" timeout=2 network-timeout=2 tls_cacert=$dir/ca.pem tls_reqcert=demand
olcMultiProvider: TRUE
LDIF
fi
if [ -n "$provider" ]; then
cat <<LDIF
olcSyncrepl: {0}rid=001 provider=ldaps://127.0.0.1:$provider bindmethod=simple binddn="cn=admin,dc=puff,dc=test" credentials=admin-secret searchbase="dc=puff,dc=test" type=refreshAndPersist retry="1 +" tls_cacert=$dir/ca.pem tls_reqcert=demand
olcUpdateRef: ldaps://127.0.0.1:$provider
LDIF
else
cat <<LDIF

dn: olcOverlay={0}syncprov,olcDatabase={1}mdb,cn=config
objectClass: olcOverlayConfig
objectClass: olcSyncProvConfig
olcOverlay: {0}syncprov
LDIF
fi
} > "$dir/config.ldif"

if [ ! -e "$dir/config/cn=config.ldif" ]; then
    slapadd -n0 -F "$dir/config" -l "$dir/config.ldif" >/dev/null
    if [ -z "$provider" ] && [ "$serverid" != 2 ]; then
        hostpw1=$(slappasswd -s host1-secret) hostpw2=$(slappasswd -s host2-secret)
        cat > "$dir/data.ldif" <<LDIF
dn: dc=puff,dc=test
objectClass: dcObject
objectClass: organization
dc: puff
o: Puff test fleet

dn: ou=people,dc=puff,dc=test
objectClass: organizationalUnit
ou: people

dn: ou=hosts,dc=puff,dc=test
objectClass: organizationalUnit
ou: hosts

dn: cn=host1,ou=hosts,dc=puff,dc=test
objectClass: device
objectClass: simpleSecurityObject
cn: host1
userPassword: $hostpw1

dn: cn=host2,ou=hosts,dc=puff,dc=test
objectClass: device
objectClass: simpleSecurityObject
cn: host2
userPassword: $hostpw2
LDIF
        slapadd -n1 -F "$dir/config" -l "$dir/data.ldif" >/dev/null 2>&1
    fi
fi

# A socket left by a server killed with SIGKILL would pass for the new one's.
rm -f "$dir/ldapi"
ldapi="ldapi://$(printf '%s' "$dir/ldapi" | sed 's|/|%2F|g')"
slapd -F "$dir/config" -h "$ldapi ldaps://127.0.0.1:$port/ ldap://127.0.0.1:$((port + 1))/" </dev/null >/dev/null 2>"$dir/slapd.log"
# Started when it answers over the socket (a search right after the pid file appears could
# otherwise meet a server still opening its database).
for _ in $(seq 150); do
    [ -S "$dir/ldapi" ] && [ -s "$dir/slapd.pid" ] \
        && timeout 5 ldapwhoami -Q -Y EXTERNAL -H "$ldapi" >/dev/null 2>&1 && exit 0
    sleep 0.1
done
echo "slapd did not start; its first complaints:" >&2
timeout 5 slapd -d 1 -F "$dir/config" -h "ldaps://127.0.0.1:$port/" 2>&1 | grep -iE 'fail|error|could not' | head -5 >&2
exit 1
