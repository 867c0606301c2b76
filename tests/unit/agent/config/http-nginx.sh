#!/bin/sh
# Prepares DIR for test-http and tests/native/http-source.sh:
# DIR/nginx.conf (a plain server on 127.0.0.1:PORT, a TLS server with client
# certificates required on 127.0.0.1:TLSPORT, both with root DIR/root),
# a CA with a server and a client certificate, and a second CA with a client
# certificate the server does not trust ("wrong").
# usage: http-nginx.sh DIR PORT TLSPORT
set -eu
d=$1
port=$2
tlsport=$3
mkdir -p "$d/root/secret" "$d/tmp" "$d/pki"
cd "$d/pki"
ossl() { openssl "$@" >/dev/null 2>&1; }
# P-256 keys: made at once (an RSA key took tens of seconds in the VM under
# qemu's software emulation)
ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=cubelet-test-ca -keyout ca.key -out ca.crt
ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=other-ca -keyout other-ca.key -out other-ca.crt
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >san.ext
ossl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=127.0.0.1 -keyout server.key -out server.csr
ossl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile san.ext -out server.crt
ossl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=node1 -keyout client.key -out client.csr
ossl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -out client.crt
ossl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=node1 -keyout wrong.key -out wrong.csr
ossl x509 -req -in wrong.csr -CA other-ca.crt -CAkey other-ca.key -CAcreateserial -days 2 -out wrong.crt
cat >"$d/nginx.conf" <<EOF
daemon off;
master_process off;
worker_processes 1;
pid $d/nginx.pid;
error_log $d/error.log;
events { worker_connections 64; }
http {
    access_log $d/access.log;
    client_body_temp_path $d/tmp/body;
    proxy_temp_path $d/tmp/proxy;
    fastcgi_temp_path $d/tmp/fastcgi;
    uwsgi_temp_path $d/tmp/uwsgi;
    scgi_temp_path $d/tmp/scgi;
    default_type application/octet-stream;
    server {
        listen 127.0.0.1:$port;
        root $d/root;
        location = /r1 { return 302 /r2; }
        location = /r2 { return 302 /r3; }
        location = /r3 { return 302 /r4; }
        location = /r4 { return 302 /r5; }
        location = /r5 { return 302 /web.json; }
        location = /r0 { return 302 /r1; }
        location /secret/ { if (\$http_x_token != "s3cret") { return 403; } }
    }
    server {
        listen 127.0.0.1:$tlsport ssl;
        root $d/root;
        ssl_certificate $d/pki/server.crt;
        ssl_certificate_key $d/pki/server.key;
        ssl_client_certificate $d/pki/ca.crt;
        ssl_verify_client on;
    }
}
EOF
