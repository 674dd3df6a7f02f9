#!/bin/sh
# One-shot MinIO setup, run by the `minio-init` service (minio/mc image); safe to run again.
#
# Creates the bucket for model archives, scores and reports, and the user the Airflow
# tasks sign in as (S3_ACCESS_KEY / S3_SECRET_KEY, the login and password of the
# `modelgate_s3` connection) with access to that bucket only. The root credentials stay
# with this container and the MinIO server.
set -eu

: "${MINIO_ROOT_USER:?}" "${MINIO_ROOT_PASSWORD:?}" "${S3_ACCESS_KEY:?}" "${S3_SECRET_KEY:?}"
: "${S3_BUCKET:?}" "${S3_ENDPOINT:?}"
policy_name="modelgate-bucket-rw"

# Refuse the placeholders of docker/.env.example.
for value in "${MINIO_ROOT_USER}" "${MINIO_ROOT_PASSWORD}" "${S3_ACCESS_KEY}" "${S3_SECRET_KEY}"; do
    case "${value}" in
        *change-me*) echo "minio-init: replace the change-me placeholders in .env" >&2; exit 1 ;;
    esac
done

mc alias set local "${S3_ENDPOINT}" "${MINIO_ROOT_USER}" "${MINIO_ROOT_PASSWORD}" >/dev/null
mc mb --ignore-existing "local/${S3_BUCKET}"

policy_file=/tmp/modelgate-bucket-policy.json
cat >"${policy_file}" <<EOF
{
  "Version": "2012-10-17",
  "Statement": [
    {
      "Effect": "Allow",
      "Action": ["s3:GetBucketLocation", "s3:ListBucket"],
      "Resource": ["arn:aws:s3:::${S3_BUCKET}"]
    },
    {
      "Effect": "Allow",
      "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"],
      "Resource": ["arn:aws:s3:::${S3_BUCKET}/*"]
    }
  ]
}
EOF
mc admin policy create local "${policy_name}" "${policy_file}"
rm -f "${policy_file}"

# `user add` on an existing user updates its secret key, so .env stays the source of truth.
mc admin user add local "${S3_ACCESS_KEY}" "${S3_SECRET_KEY}"
# Attaching a policy that is already attached is an error, hence the look first (in plain
# sh: the minimal mc image may have no grep).
user_info="$(mc admin user info local "${S3_ACCESS_KEY}")"
case "${user_info}" in
    *"${policy_name}"*) ;;
    *) mc admin policy attach local "${policy_name}" --user "${S3_ACCESS_KEY}" ;;
esac
echo "bucket ${S3_BUCKET} and its user are ready"
