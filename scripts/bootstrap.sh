#!/usr/bin/env bash
# Creates .venv and installs Watershed with its dev extras; checks for Java 17.
# Re-running is cheap: the install is skipped while pyproject.toml is unchanged.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
if ! command -v "$PYTHON" >/dev/null 2>&1; then
    echo "error: $PYTHON not found; Watershed needs Python 3.11 or newer" >&2
    exit 1
fi
if ! "$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; then
    echo "error: $("$PYTHON" --version) is too old; Watershed needs Python 3.11 or newer" >&2
    exit 1
fi

have_compiler=1
if ! command -v cc >/dev/null 2>&1 || [ ! -f /usr/include/openssl/sha.h ]; then
    have_compiler=0
    echo "warning: no C compiler or OpenSSL headers: the SHA-256 mask uses its slower Python fallback" >&2
    echo "         ('apt-get install -y build-essential libssl-dev' on Debian/Ubuntu builds the extension)." >&2
fi

if ! command -v java >/dev/null 2>&1; then
    echo "error: java not found. PySpark needs Java 17: on Debian/Ubuntu run" >&2
    echo "       'apt-get install -y openjdk-17-jdk-headless' (or set JAVA_HOME)." >&2
    exit 1
fi
java_major="$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)"
if [ "${java_major:-0}" -lt 17 ]; then
    echo "error: java ${java_major:-?} found; PySpark 4 needs Java 17 or newer" >&2
    echo "       ('apt-get install -y openjdk-17-jdk-headless' on Debian/Ubuntu)." >&2
    exit 1
fi

if [ ! -x .venv/bin/python ]; then
    echo "creating .venv"
    "$PYTHON" -m venv .venv
fi
stamp=.venv/.watershed-installed
# Reinstall when pyproject.toml or the C extension changed, or when the install is gone (a venv
# rebuilt by hand, an extension module deleted).
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ setup.py -nt "$stamp" ] || [ orc_crypto/masking/_sha256.c -nt "$stamp" ] \
    || [ ! -x .venv/bin/watershed ] || { [ "$have_compiler" = 1 ] && ! ls orc_crypto/masking/_sha256.*.so >/dev/null 2>&1; }; then
    echo "installing watershed and its dependencies into .venv (first run takes a few minutes)"
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet -e '.[all,dev]'
    touch "$stamp"
fi

# --- the web UI: npm libraries (pinned by api/web/package-lock.json) copied into static/vendor, and
# Debian's chromium for the browser tests (Playwright drives it; `playwright install` is never run).
apt_updated=0
apt_install() {
    if [ "$(id -u)" != 0 ]; then
        echo "warning: $1 is missing and this is not root: run 'apt-get update && apt-get install -y $*'" >&2
        return 1
    fi
    if [ "$apt_updated" = 0 ]; then
        apt-get update -qq
        apt_updated=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"
}

web=api/web
vendor="$web/static/vendor"
if ! command -v npm >/dev/null 2>&1; then
    apt_install nodejs npm || true
fi
# npm ci into $1 (its package-lock.json pins every package) when the lock is newer than the
# install or the install is gone. --ignore-scripts: packages are used as published; none runs code
# at install.
npm_install_stale() {
    if [ ! -f "$1/node_modules/.package-lock.json" ] || [ "$1/package-lock.json" -nt "$1/node_modules/.package-lock.json" ]; then
        echo "installing the npm packages of $1"
        # exit, not return: the caller tests the result in an `if`, where set -e does not apply
        npm ci --prefix "$1" --prefer-offline --ignore-scripts --no-audit --no-fund --loglevel=error \
            || { echo "error: 'npm ci' in $1 failed" >&2; exit 1; }
        return 0
    fi
    return 1
}
if command -v npm >/dev/null 2>&1; then
    if npm_install_stale "$web" || [ ! -f "$vendor/cytoscape.esm.min.js" ] || [ ! -f "$vendor/htm-preact.js" ]; then
        mkdir -p "$vendor"
        # Each file is the published module behind its package's licence as a comment (the minified
        # files carry none). .js names: the package data ships *.js, and every server maps it to JavaScript.
        vendor_copy() {  # package, file inside it, vendor name
            { printf '/*! npm %s, licence:\n' "$1"; sed 's#\*/#* /#g' "$web/node_modules/$1/LICENSE"; printf '*/\n'
              cat "$web/node_modules/$1/$2"; } >"$vendor/$3.tmp"
            mv "$vendor/$3.tmp" "$vendor/$3"
        }
        vendor_copy cytoscape dist/cytoscape.esm.min.mjs cytoscape.esm.min.js
        # htm's standalone build bundles preact (MIT) with htm and preact's hooks
        vendor_copy htm preact/standalone.module.js htm-preact.js
    fi
    # Neo4j's own Cypher parser, for tests/graph/test_neo4j_cypher.py (no Neo4j server runs here)
    npm_install_stale tests/cypher || true
    # a real OpenID Connect provider (oidc-provider) for the single sign-on tests (tests/support/oidc.py)
    npm_install_stale tests/support/oidc_provider || true
else
    echo "warning: npm not found: the web UI has no vendor libraries (api/web/static/vendor)" >&2
fi
if [ ! -x /usr/bin/chromium ]; then
    apt_install chromium || echo "warning: the browser tests (tests/web) need /usr/bin/chromium" >&2
fi

# --- the local Neo4j (WATERSHED_BACKEND=neo4j, docs/graph.md): Neo4j Community and its Bolt
# connector, pinned in graph/neo4j_launcher/pom.xml, copied from Maven Central with their
# dependencies into the virtualenv (`rm -rf .venv` removes them), and the launcher compiled beside
# them. Skipped while that version is in place and the launcher is compiled from the current source.
launcher=graph/neo4j_launcher
neo4j_version="$(sed -n 's:.*<neo4j.version>\(.*\)</neo4j.version>.*:\1:p' "$launcher/pom.xml")"
neo4j_root=.venv/share/watershed
neo4j_dir="$neo4j_root/neo4j-$neo4j_version"
if [ ! -f "$neo4j_dir/lib/.complete" ]; then
    if ! command -v mvn >/dev/null 2>&1; then
        apt_install maven || { echo "error: mvn not found: the local Neo4j is fetched with Maven ('apt-get install -y maven')" >&2; exit 1; }
    fi
    echo "fetching Neo4j $neo4j_version from Maven Central into $neo4j_dir (about 125 MB, once)"
    rm -rf "$neo4j_dir.tmp"
    mkdir -p "$neo4j_root"
    mvn -q -B -f "$launcher/pom.xml" dependency:copy-dependencies -DincludeScope=runtime \
        -DoutputDirectory="$PWD/$neo4j_dir.tmp/lib" >"$neo4j_root/fetch.log" 2>&1 \
        || { echo "error: fetching Neo4j $neo4j_version with mvn failed; see $neo4j_root/fetch.log" >&2; exit 1; }
    touch "$neo4j_dir.tmp/lib/.complete"
    # another pinned version's copy is no longer used
    find "$neo4j_root" -mindepth 1 -maxdepth 1 -type d -name 'neo4j-*' ! -name "neo4j-$neo4j_version.tmp" -exec rm -rf {} +
    mv "$neo4j_dir.tmp" "$neo4j_dir"
fi
if [ ! -f "$neo4j_dir/classes/WatershedNeo4j.class" ] || [ "$launcher/WatershedNeo4j.java" -nt "$neo4j_dir/classes/WatershedNeo4j.class" ]; then
    if ! command -v javac >/dev/null 2>&1; then
        echo "error: javac not found: the Neo4j launcher is compiled with a JDK ('apt-get install -y openjdk-17-jdk-headless')" >&2
        exit 1
    fi
    rm -rf "$neo4j_dir/classes"
    javac -nowarn --release 17 -cp "$neo4j_dir/lib/*" -d "$neo4j_dir/classes" "$launcher/WatershedNeo4j.java" \
        || { echo "error: compiling $launcher/WatershedNeo4j.java failed" >&2; exit 1; }
fi

# --- OpenLineage's Spark listener, for the tests that attach it to a local PySpark session
# (tests/ingest/test_openlineage_spark.py): the shaded jar pinned in scripts/maven/openlineage-spark/
# pom.xml, copied from Maven Central into the virtualenv once; nothing is downloaded at run time.
ol_pom=scripts/maven/openlineage-spark/pom.xml
ol_version="$(sed -n 's:.*<openlineage.version>\(.*\)</openlineage.version>.*:\1:p' "$ol_pom")"
ol_root=.venv/share/watershed
ol_dir="$ol_root/openlineage-spark-$ol_version"
if [ ! -f "$ol_dir/.complete" ]; then
    echo "fetching OpenLineage's Spark listener $ol_version from Maven Central into $ol_dir (about 45 MB, once)"
    rm -rf "$ol_dir.tmp"
    mkdir -p "$ol_root"
    mvn -q -B -f "$ol_pom" dependency:copy-dependencies -DincludeScope=runtime -DexcludeTransitive=true \
        -DoutputDirectory="$PWD/$ol_dir.tmp" >"$ol_root/openlineage-fetch.log" 2>&1 \
        || { echo "error: fetching io.openlineage:openlineage-spark_2.13:$ol_version with mvn failed; see $ol_root/openlineage-fetch.log" >&2; exit 1; }
    touch "$ol_dir.tmp/.complete"
    # another pinned version's copy is no longer used
    find "$ol_root" -mindepth 1 -maxdepth 1 -type d -name 'openlineage-spark-*' ! -name "openlineage-spark-$ol_version.tmp" -exec rm -rf {} +
    mv "$ol_dir.tmp" "$ol_dir"
fi
