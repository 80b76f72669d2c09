#!/usr/bin/perl
# Usage: scripts/upgrade-script.pl FROM TO DELTA PART...
#
# Writes (to stdout) the upgrade script FROM -> TO of model_select: the
# hand-written DDL delta DELTA (sql/upgrade/FROM--TO.sql) with its marker line
#     -- @functions and views@
# replaced by what the install parts PART... (sql/install/*.sql, in that
# order) state of
#   - every function: each CREATE FUNCTION or PROCEDURE as CREATE OR REPLACE,
#     and each COMMENT ON, ALTER, GRANT and REVOKE on functions;
#   - then every view: each CREATE VIEW as CREATE OR REPLACE VIEW, with its
#     COMMENT ON VIEW and COMMENT ON COLUMN statements;
# each with the comment lines just above it.  CREATE OR REPLACE cannot change
# a function's arguments or result, nor a view's columns other than by
# appending: the delta drops such a function or view before the marker.
# Everything else (tables, triggers, policies, DO blocks, data) is the
# delta's to state.  Fails on a statement it cannot split (an unterminated
# quote) and on a function or view created inside another statement.
use strict;
use warnings;

die "usage: $0 FROM TO DELTA PART...\n" unless @ARGV >= 4;
my ($from, $to, $delta, @parts) = @ARGV;

sub slurp {
    my ($path) = @_;
    open(my $fh, '<', $path) or die "$0: $path: $!\n";
    local $/;
    my $text = <$fh>;
    close $fh;
    return $text;
}

# The statements of an SQL file, each with the whitespace and comments before
# it: split at the semicolons outside comments, quotes and dollar quotes.
sub statements {
    my ($path, $text) = @_;
    my @out;
    my ($start, $i, $n) = (0, 0, length $text);
    while ($i < $n) {
        my $c = substr($text, $i, 1);
        my $two = substr($text, $i, 2);
        if ($two eq '--') {
            my $e = index($text, "\n", $i);
            $i = $e < 0 ? $n : $e + 1;
        } elsif ($two eq '/*') {
            my $e = index($text, '*/', $i + 2);
            die "$0: $path: unterminated /* comment\n" if $e < 0;
            $i = $e + 2;
        } elsif ($c eq "'") {
            # E'...' strings take backslash escapes; '' is a quote in both kinds
            my $escapes = $i > 0 && substr($text, 0, $i) =~ /(?<![\w\$])[eE]\z/;
            $i++;
            while (1) {
                die "$0: $path: unterminated string\n" if $i >= $n;
                my $d = substr($text, $i, 1);
                if ($escapes && $d eq '\\') { $i += 2; next; }
                if ($d eq "'") {
                    if (substr($text, $i + 1, 1) eq "'") { $i += 2; next; }
                    $i++;
                    last;
                }
                $i++;
            }
        } elsif ($c eq '"') {
            my $e = index($text, '"', $i + 1);
            die "$0: $path: unterminated quoted identifier\n" if $e < 0;
            $i = $e + 1;
        } elsif ($c eq '$' && substr($text, $i, 64) =~ /\A(\$(?:[A-Za-z_][A-Za-z_0-9]*)?\$)/
                 && ($i == 0 || substr($text, $i - 1, 1) !~ /[\w\$]/)) {
            my $tag = $1;
            my $e = index($text, $tag, $i + length $tag);
            die "$0: $path: unterminated $tag quote\n" if $e < 0;
            $i = $e + length $tag;
        } else {
            if ($c eq ';') {
                push @out, substr($text, $start, $i + 1 - $start);
                $start = $i + 1;
            }
            $i++;
        }
    }
    my $rest = substr($text, $start);
    $rest =~ s/^\s*--[^\n]*\n?//mg;
    die "$0: $path: text after the last statement\n" if $rest =~ /\S/;
    return @out;
}

my $routine = qr/(?:FUNCTION|PROCEDURE|ROUTINE)/i;
my $name = qr/(?:"[^"]+"|[\w\$]+)(?:\.(?:"[^"]+"|[\w\$]+))*/;

# Every statement of the parts, without the comment lines above it
my @statements;
for my $part (@parts) {
    for my $stmt (statements($part, slurp($part))) {
        # the comment lines just above the statement (no blank line between)
        my ($lead) = $stmt =~ /\A(\s*(?:--[^\n]*\n\s*)*)/;
        my @lead = split /\n/, $lead;
        my @comment;
        unshift @comment, pop @lead while @lead && $lead[-1] =~ /^\s*--/;
        push @statements, { part => $part, comment => \@comment, body => substr($stmt, length $lead) };
    }
}
my %views = map { lc $_ => 1 }
    map { $_->{body} =~ /\ACREATE\s+(?:OR\s+REPLACE\s+)?VIEW\s+($name)/i ? $1 : () } @statements;

# What the script takes of each statement: 'functions', 'views' or nothing
sub kind {
    my ($s) = @_;
    return 'functions' if $s->{body} =~ s/\ACREATE\s+(?:OR\s+REPLACE\s+)?($routine)\b/CREATE OR REPLACE $1/i
        || $s->{body} =~ /\A(?:COMMENT\s+ON|ALTER)\s+$routine\b/i
        || ($s->{body} =~ /\A(?:GRANT|REVOKE)\b/i
            && $s->{body} =~ /\bON\s+(?:$routine|ALL\s+(?:FUNCTIONS|PROCEDURES|ROUTINES))\b/i);
    return 'views' if $s->{body} =~ s/\ACREATE\s+(?:OR\s+REPLACE\s+)?VIEW\b/CREATE OR REPLACE VIEW/i
        || $s->{body} =~ /\ACOMMENT\s+ON\s+VIEW\b/i
        || ($s->{body} =~ /\ACOMMENT\s+ON\s+COLUMN\s+($name)\.(?:"[^"]+"|[\w\$]+)\s+IS\b/i && $views{lc $1});
    die "$s->{part}: a function or view created inside another statement: make it a statement of its own\n"
        if $s->{body} =~ /\bCREATE\s+(?:OR\s+REPLACE\s+)?(?:$routine|VIEW)\b/i;
    return '';
}

my %section = (functions => [], views => []);
my %last_part;
for my $s (@statements) {
    my $kind = kind($s) or next;
    push @{$section{$kind}}, "\n-- ---- $s->{part} ----\n"
        unless ($last_part{$kind} // '') eq $s->{part};
    $last_part{$kind} = $s->{part};
    push @{$section{$kind}}, join("\n", @{$s->{comment}}, $s->{body});
}

my $text = slurp($delta);
my $marker = qr/^-- \@functions and views\@[ \t]*$/m;
my $count = () = $text =~ /$marker/g;
die "$0: $delta: needs exactly one line '-- \@functions and views\@' (it has $count)\n" unless $count == 1;
my $generated = "-- ==== GENERATED: the functions of sql/install/ (CREATE OR REPLACE), with their comments and rights ====\n\n"
    . join("\n", @{$section{functions}})
    . "\n\n-- ==== GENERATED: the views of sql/install/ (CREATE OR REPLACE), with their comments ====\n\n"
    . join("\n", @{$section{views}})
    . "\n\n-- ==== end of the generated part ====";
$text =~ s/$marker/$generated/;

print "-- model_select $from -> $to upgrade script.  GENERATED by make from $delta\n",
      "-- (the DDL written by hand) and the functions of sql/install/*.sql: edit those, not this file.\n\n",
      "\\echo Use \"ALTER EXTENSION model_select UPDATE TO '$to'\" to load this file. \\quit\n\n",
      $text;
